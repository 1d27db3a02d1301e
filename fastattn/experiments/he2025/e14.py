"""E14: a ±γ pair of softmax heads with μ = ±η/(2γ) is debiased GD (= linear attention on centred
covariates) up to O(γ²) (spec §5.3, Theorem 1 (Approximation), §6 E14). On fixed prompts, the
relative distance E[(ŷ_pair − ŷ_dGD)²]^½ / E[ŷ_dGD²]^½ against γ, with a γ² line; and the pair's
Monte-Carlo risk against the closed form R_dGD(η) it tends to."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import L_TRAIN, SIGMA2, D, one_thread, task
from fastattn.experiments.recipe import Recipe, Run
from fastattn.models import KernelRegressors
from fastattn.models.predictors import debiased_gd
from fastattn.theory import he2025 as th


def runs(quick: bool = False) -> list:
    return []


def pair(gamma: float, eta: float) -> KernelRegressors:
    """Heads (γ, −γ) with μ = ±η/(2γ)."""
    model = KernelRegressors(D, 2)
    mu = eta / (2 * gamma)
    model.load_flat(np.array([gamma, -gamma, mu, -mu]))
    return model.requires_grad_(False)


def summarize(_runs: list[Run], quick: bool = False) -> dict[str, Any]:
    n = 1000 if quick else 20_000
    gammas = np.logspace(-3, -0.5, 6 if quick else 11)
    eta = th.eta_star(D, L_TRAIN, SIGMA2)
    batch = task().sample(n, 0)
    dgd = debiased_gd(eta)
    with torch.no_grad(), one_thread():
        ref = dgd(batch.x, batch.y, batch.x_q)
        rel = [float(((pair(g, eta)(batch.x, batch.y, batch.x_q) - ref) ** 2).mean().sqrt()
                     / (ref ** 2).mean().sqrt()) for g in gammas]
        risks = [monte_carlo_risk(pair(g, eta), task(), n, seed=5) for g in gammas]
    slope = np.polyfit(np.log(gammas[:4]), np.log(rel[:4]), 1)[0]
    return {"gamma": gammas, "eta": eta, "n_prompts": n, "relative_distance": rel,
            "log_log_slope_small_gamma": float(slope),
            "pair_risk": [r.mean for r in risks], "pair_risk_se": [r.se for r in risks],
            "dgd_closed_form": float(th.risk_dgd(eta, D, L_TRAIN, SIGMA2))}


def plot(_runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    g = np.asarray(summary["gamma"])
    rel = np.asarray(summary["relative_distance"])
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9.5, 3.6), layout="constrained")
    ax0.loglog(g, rel, "o-", label="‖ŷ_pair − ŷ_dGD‖ / ‖ŷ_dGD‖")
    ax0.loglog(g, rel[0] * (g / g[0]) ** 2, "k--", lw=1, label="∝ γ²")
    ax0.set_xlabel("γ")
    ax0.set_ylabel("relative distance to dGD(η*)")
    ax0.legend(fontsize=7)
    ax1.errorbar(g, summary["pair_risk"], yerr=summary["pair_risk_se"], fmt="o",
                 label="±γ pair, μ = η*/(2γ) (MC)")
    ax1.axhline(summary["dgd_closed_form"], color="k", ls="--", lw=1, label="R_dGD(η*) closed form")
    ax1.set_xscale("log")
    ax1.set_xlabel("γ")
    ax1.set_ylabel("MSE (σ² floor included)")
    ax1.legend(fontsize=7)
    return fig


RECIPE = Recipe("Small-γ equivalence: the ±γ softmax pair tends to debiased GD (linear attention on "
                "centred covariates) at rate γ².", runs, summarize, plot)
