"""E9: concentration of the softmax weights' norm ‖smax(s X x_q)‖₂ over prompts (spec §6 E9), the
fact behind the (1+σ²)/L · exp(dωωᵀ) term of the approximate loss (§5.2): for large L the norm is
close to √(e^{d s²}/L) (`theory.he2025.softmax_norm_prediction`, drawn as a line); it fails once
d s² is comparable to log L (the weights concentrate on a few tokens)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.recipe import Recipe, Run
from fastattn.theory import he2025 as th

#: (panel title, scale s, [(L, d), ...]) of the repo's histograms
PANELS = (("s = 0.5, d = 5", 0.5, ((40, 5), (100, 5), (500, 5))),
          ("s = 0.5, d/L = 1/8", 0.5, ((40, 5), (200, 25), (800, 100))),
          ("s = 0.35, d/L = 1/8", 0.35, ((40, 5), (200, 25), (800, 100))))


def runs(quick: bool = False) -> list:
    return []


def softmax_norms(scale: float, L: int, d: int, n: int, seed: int) -> np.ndarray:
    """‖smax(s X x_q)‖₂ `[n]` for x_ℓ, x_q ~ N(0, I_d)."""
    rng = np.random.default_rng(seed)
    out = []
    for m in [min(1000, n - i) for i in range(0, n, 1000)]:
        x, xq = rng.standard_normal((m, L, d)), rng.standard_normal((m, d))
        logits = scale * np.einsum("mld,md->ml", x, xq)
        p = np.exp(logits - logits.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out.append(np.linalg.norm(p, axis=-1))
    return np.concatenate(out)


def summarize(_runs: list[Run], quick: bool = False) -> dict[str, Any]:
    n = 400 if quick else 10_000
    out: dict[str, Any] = {"n": n, "panels": []}
    for k, (title, s, cases) in enumerate(PANELS):
        rows = []
        for L, d in cases:
            norms = softmax_norms(s, L, d, n, seed=100 * k + L)
            rows.append({"L": L, "d": d, "norms": norms, "mean": float(norms.mean()),
                         "std": float(norms.std()),
                         "prediction": float(th.softmax_norm_prediction(s, d, L))})
        out["panels"].append({"title": title, "scale": s, "cases": rows})
    return out


def plot(_runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), layout="constrained")
    for ax, panel in zip(axes, summary["panels"], strict=True):
        for i, c in enumerate(panel["cases"]):
            ax.hist(c["norms"], bins=40, range=(0, 1), color=f"C{i}", alpha=0.5, density=True,
                    label=f"L = {c['L']}, d = {c['d']}")
            if c["prediction"] <= 1:
                ax.axvline(c["prediction"], color=f"C{i}", ls="--", lw=1)
        ax.set_xlabel("‖smax(s X x_q)‖₂ (dashed: √(e^{ds²}/L))")
        ax.set_ylabel("density")
        ax.set_title(panel["title"], fontsize=8)
        ax.legend(fontsize=7)
    return fig


RECIPE = Recipe("Histograms of the softmax weights' norm over prompts; dashed: the large-L "
                "prediction of §5.2 (off the axis where it exceeds 1).", runs, summarize, plot)
