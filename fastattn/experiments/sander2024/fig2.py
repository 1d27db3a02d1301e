"""Fig. 2: the trigonometric identity 2cos θ R_θ − I₂ = R_{2θ} that the orthogonal minima implement
(Lemma 3: ŝ_{T+1} = 2cos θ s_T − s_{T−1}), checked on a θ grid and on real rotation sequences."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.tasks import AutoRegressive
from fastattn.theory import sander2024 as theory


def runs(quick: bool) -> list[RunSpec]:
    return []


def summarize(runs: list[Run]) -> dict[str, Any]:
    theta = np.linspace(0, 2 * np.pi, 721)
    lhs = 2 * np.cos(theta)[:, None, None] * theory.rotation(theta) - np.eye(2)
    identity = float(np.abs(lhs - theory.rotation(2 * theta)).max())
    batch = AutoRegressive(dim=2, context=20, context_dist="orthogonal",
                           representation="real").sample(1000, 0)
    s, cos = batch.states.numpy(), batch.W[:, 0, 0].numpy()
    pred = 2 * cos[:, None, None] * s[:, 1:-1] - s[:, :-2]
    return {"identity_max_error": identity,
            "lemma3_predictor_max_error": float(np.abs(pred - s[:, 2:]).max()),
            "n_theta": theta.size, "n_sequences": 1000}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 4))
    circle = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(circle), np.sin(circle), color="0.8")
    theta, s = 0.5, np.array([1.0, 0.0])
    rs, r2s = theory.rotation(theta) @ s, theory.rotation(2 * theta) @ s
    for v, label in ((s, "s"), (rs, "R_θ s"), (2 * np.cos(theta) * rs, "2cos θ R_θ s"),
                     (r2s, "R_2θ s = 2cos θ R_θ s − s")):
        ax.annotate("", v, (0, 0), arrowprops={"arrowstyle": "->"})
        ax.text(*(1.05 * v), label, fontsize=7)
    ax.plot(*zip(2 * np.cos(theta) * rs, r2s, strict=True), "k:", lw=0.8)
    ax.set(aspect="equal", xlabel="coordinate 1", ylabel="coordinate 2")
    ax.set_title(f"max error over θ: {summary['identity_max_error']:.1e}", fontsize=8)
    return fig


RECIPE = Recipe("The orthogonal zero-loss solution predicts s_{T+1} = 2cos θ s_T − s_{T−1}.",
                runs, summarize, plot)
