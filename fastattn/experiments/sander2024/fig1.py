"""Fig. 1: AR(1) trajectories s_{t+1} = W s_t in R³ for two orthogonal context matrices W (Haar on
O(3), the §6 sampler), from the same start s_1 = 1/√3: each orbit stays on the unit sphere and turns
about W's axis, so the next token follows from the context's own rotation."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.tasks import AutoRegressive

TMAX, N_ORBITS = 40, 2


def runs(quick: bool) -> list[RunSpec]:
    return []


def summarize(runs: list[Run]) -> dict[str, Any]:
    batch = AutoRegressive(dim=3, context=TMAX, context_dist="haar", representation="real",
                           s1="unit").sample(N_ORBITS, 0)
    s, W = batch.states.numpy(), batch.W.numpy()
    norms = np.linalg.norm(s, axis=-1)
    return {"orbits": s, "W": W, "determinants": np.linalg.det(W),
            "max_norm_drift": float(np.abs(norms - 1).max())}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(4.6, 4.2))
    ax = fig.add_subplot(projection="3d")
    for k, (orbit, marker, det) in enumerate(zip(np.asarray(summary["orbits"]), ("o", "x"),
                                                 summary["determinants"], strict=True)):
        ax.scatter(*orbit.T, marker=marker, s=14, label=f"orbit {k + 1}: W^t s_1, det W = {det:+.0f}")
    ax.scatter(*np.asarray(summary["orbits"])[0, 0], color="k", s=40, label="s_1")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_zlabel("z")
    ax.locator_params(nbins=4)
    ax.set_title(f"t = 1..{TMAX + 1}; ‖s_t‖ − 1 ≤ {summary['max_norm_drift']:.0e}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    return fig


RECIPE = Recipe("Orbits of two orthogonal context matrices from one start.", runs, summarize, plot)
