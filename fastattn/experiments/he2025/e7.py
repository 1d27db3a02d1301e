"""E7: the approximate loss L̃ (§5.2) against the true population loss ℒ of the two-head reduced
model (ω, −ω), (μ, −μ) over the grid ω ∈ [0, 0.2], μ ∈ [0, 6] (spec §6 E7; d = 5, L = 40, σ² = 0.1).

ℒ is quadratic in μ, ℒ = 1 + σ² − 2μᵀa(ω) + μᵀB(ω)μ, so one semi-analytic (a, B) per ω column
(`theory.he2025.reduced_moments`, antithetic Monte Carlo over the (L+1)-dim integral) gives the
whole column. Simulation: plain Monte Carlo risk of `KernelRegressors` at a few grid points, drawn
over the semi-analytic cut through them."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import plots
from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import L_TRAIN, SIGMA2, D, one_thread, task
from fastattn.experiments.recipe import Recipe, Run
from fastattn.models import KernelRegressors
from fastattn.theory import he2025 as th

#: the trained point (ω, μ) ≈ (0.13, 3.39) of spec §5.1 and two far corners, checked by Monte Carlo
CHECKS = ((0.13, 3.39), (0.15, 5.0), (0.05, 1.0))


def runs(quick: bool = False) -> list:
    return []


def _pair(omega: float, mu: float) -> KernelRegressors:
    model = KernelRegressors(D, 2)
    model.load_flat(np.array([omega, -omega, mu, -mu]))
    return model.requires_grad_(False)


def _true_loss(omega: float, mus: np.ndarray, n_pairs: int) -> np.ndarray:
    a, b = th.reduced_moments([omega, -omega], D, L_TRAIN, SIGMA2, n=n_pairs)
    m = np.stack([mus, -mus], -1)                                             # [M, 2]
    return 1 + SIGMA2 - 2 * m @ a + np.einsum("mh,hk,mk->m", m, b, m)


def summarize(_runs: list[Run], quick: bool = False) -> dict[str, Any]:
    n_grid, n_pairs, n_mc = (10, 4000, 4000) if quick else (20, 40_000, 40_000)
    omegas, mus = np.linspace(0, 0.2, n_grid), np.linspace(0, 6, n_grid)
    true = np.stack([_true_loss(w, mus, n_pairs) for w in omegas], 1)        # [μ, ω]
    approx = np.array([[th.approx_loss([w, -w], [m, -m], D, L_TRAIN, SIGMA2) for w in omegas]
                       for m in mus])
    diff = true - approx
    checks = []
    with one_thread():
        for w, m in CHECKS:
            r = monte_carlo_risk(_pair(w, m), task(), n_mc, seed=11)
            semi = float(_true_loss(w, np.array([m]), n_pairs)[0])
            checks.append({"omega": w, "mu": m, "monte_carlo": r.mean, "se": r.se,
                           "semi_analytic": semi,
                           "approx": th.approx_loss([w, -w], [m, -m], D, L_TRAIN, SIGMA2),
                           "mc_minus_semi_in_se": (r.mean - semi) / r.se})
    return {"omega": omegas, "mu": mus, "true_loss": true, "approx_loss": approx,
            "difference": diff, "max_abs_difference": float(np.abs(diff).max()),
            "n_pairs": n_pairs, "checks": checks}


def plot(_runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), layout="constrained")
    w, m = np.asarray(summary["omega"]), np.asarray(summary["mu"])
    step = 3 if len(w) <= 10 else 5
    labels = {"x": [f"{v:.2f}" for v in w], "y": [f"{v:.1f}" for v in m]}
    true, approx = np.asarray(summary["true_loss"]), np.asarray(summary["approx_loss"])
    lim = max(float(true.max()), float(approx.max()))
    for ax, values, title, kw in (
            (axes[0], true, "true loss ℒ (semi-analytic)", {"vmin": 0, "vmax": lim}),
            (axes[1], approx, "approximate loss L̃ (§5.2)", {"vmin": 0, "vmax": lim}),
            (axes[2], np.asarray(summary["difference"]), "ℒ − L̃",
             {"cmap": "RdBu_r", "vmin": -0.12, "vmax": 0.12})):
        plots.heatmap(ax, values, labels["x"], labels["y"], colorbar="loss" if "vmin" in kw and
                      kw["vmin"] == 0 else "difference", tick_step=step, origin="lower",
                      xlabel="ω (heads ±ω)", ylabel="μ (heads ±μ)", **kw)
        ax.set_title(title, fontsize=8)
    for c in summary["checks"]:
        i, j = np.argmin(np.abs(w - c["omega"])), np.argmin(np.abs(m - c["mu"]))
        axes[0].annotate(f"MC {c['monte_carlo']:.3f}±{c['se']:.3f}\nsemi {c['semi_analytic']:.3f}",
                         (i, j), fontsize=7, color="w", ha="center", va="center")
    return fig


RECIPE = Recipe("Two-head reduced model: true loss vs the approximate loss L̃ and their difference; "
                "white: Monte Carlo risk vs the semi-analytic value.", runs, summarize, plot)
