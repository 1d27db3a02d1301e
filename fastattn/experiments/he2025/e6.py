"""E6: debiased GD with η* against the Bayes risk (Theorem 1 (Bayes risk), spec §5.4, §6 E6).
At L = 100 and ξ = d/L ∈ {0.1, 0.2, 0.5}, σ² = 3 (the repo's check is ξ = 0.2): Monte-Carlo risks
of dGD(η*) and of ridge λ = σ²d (the Bayes posterior mean) against the finite-L closed form R_dGD(η*)
and the limits lim R_dGD = 1 + σ² − η*(ξ), BayesRisk_ξ (Marchenko–Pastur); their ratio against
Theorem 1's bound, drawn over ξ."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import one_thread, task
from fastattn.experiments.recipe import Recipe, Run
from fastattn.models.predictors import Ridge, debiased_gd
from fastattn.theory import he2025 as th

L, SIGMA2_E6 = 100, 3.0
XIS = (0.1, 0.2, 0.5)


def runs(quick: bool = False) -> list:
    return []


def summarize(_runs: list[Run], quick: bool = False) -> dict[str, Any]:
    n = 1000 if quick else 50_000
    rows = []
    with one_thread():
        for xi in XIS:
            d = round(xi * L)
            eta = th.eta_star(d, L, SIGMA2_E6)
            t = task(dim=d, context=L, noise=SIGMA2_E6)
            gd = monte_carlo_risk(debiased_gd(eta), t, n, seed=d)
            ridge = monte_carlo_risk(Ridge(SIGMA2_E6 * d), t, n, seed=d)
            rows.append({"xi": xi, "d": d, "eta_star": eta, "dgd_mc": gd.mean, "dgd_se": gd.se,
                         "dgd_closed": float(th.risk_dgd(eta, d, L, SIGMA2_E6)),
                         "ridge_mc": ridge.mean, "ridge_se": ridge.se,
                         "dgd_limit": th.dgd_limit(xi, SIGMA2_E6),
                         "bayes_limit": th.bayes_risk_limit(xi, SIGMA2_E6),
                         "ratio_mc": gd.mean / ridge.mean,
                         # both on the same prompts: positively correlated, so this (independent
                         # errors) over-states the ratio's standard error
                         "ratio_mc_se": gd.mean / ridge.mean * float(np.hypot(gd.se / gd.mean,
                                                                              ridge.se / ridge.mean)),
                         "ridge_mc_minus_bayes_limit_in_se":
                             (ridge.mean - th.bayes_risk_limit(xi, SIGMA2_E6)) / ridge.se,
                         "ratio_limit": th.dgd_limit(xi, SIGMA2_E6) / th.bayes_risk_limit(xi, SIGMA2_E6),
                         "bound": th.theorem1_bound(xi, SIGMA2_E6)})
    grid = np.linspace(0.02, 1.0, 60)
    ratio = [th.dgd_limit(x, SIGMA2_E6) / th.bayes_risk_limit(x, SIGMA2_E6) for x in grid]
    bound = [th.theorem1_bound(x, SIGMA2_E6) for x in grid]
    return {"L": L, "sigma2": SIGMA2_E6, "n_prompts": n, "rows": rows, "xi_grid": grid,
            "ratio_limit_grid": ratio, "bound_grid": bound,
            "max_ratio_limit_minus_bound": float(np.max(np.subtract(ratio, bound)))}


def plot(_runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    rows = summary["rows"]
    xi = [r["xi"] for r in rows]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9.5, 3.6), layout="constrained")
    ax0.errorbar(xi, [r["dgd_mc"] for r in rows], yerr=[r["dgd_se"] for r in rows], fmt="o",
                 color="C0", label="dGD(η*) (MC)")
    ax0.errorbar(xi, [r["ridge_mc"] for r in rows], yerr=[r["ridge_se"] for r in rows], fmt="s",
                 color="C1", label="ridge λ = σ²d (MC)")
    ax0.plot(xi, [r["dgd_closed"] for r in rows], "x", color="C0", ms=8, label="R_dGD(η*) at L = 100")
    ax0.plot(xi, [r["dgd_limit"] for r in rows], "--", color="C0", lw=1, label="dGD limit")
    ax0.plot(xi, [r["bayes_limit"] for r in rows], "--", color="C1", lw=1, label="Bayes limit")
    ax0.set_xlabel("ξ = d/L (L = 100)")
    ax0.set_ylabel(f"MSE (σ² = {summary['sigma2']:g} floor included)")
    ax0.legend(fontsize=7)
    ax1.plot(summary["xi_grid"], summary["ratio_limit_grid"], "k-", lw=1, label="limit ratio")
    ax1.plot(summary["xi_grid"], summary["bound_grid"], "r--", lw=1, label="Theorem 1 bound")
    ax1.plot(xi, [r["ratio_mc"] for r in rows], "o", color="C0", label="MC ratio at L = 100")
    ax1.set_xlabel("ξ")
    ax1.set_ylabel("dGD(η*) / Bayes")
    ax1.legend(fontsize=7)
    return fig


RECIPE = Recipe("dGD(η*) vs Bayes (ridge) at σ² = 3: Monte Carlo, finite-L closed form and limits; "
                "the ratio under Theorem 1's bound.", runs, summarize, plot)
