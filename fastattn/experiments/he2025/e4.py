"""E4: trained H-head softmax attention (trained at L = 40) evaluated at L = 10…100, against
debiased GD with η* (closed form, §5.1) and the single-head kernel regressor (§1.6)."""

from __future__ import annotations

from typing import Any

from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import L_TRAIN, SIGMA2, D, task, trained_heads
from fastattn.experiments.recipe import Recipe, Run
from fastattn.models.predictors import single_head_kernel_regressor
from fastattn.theory import he2025 as th


def runs(quick: bool = False) -> list:
    return trained_heads(quick)


def _quick(runs: list[Run]) -> bool:
    return runs[0].spec.train.steps < 500_000


def summarize(runs: list[Run]) -> dict[str, Any]:
    quick = _quick(runs)
    lengths = [10, 20, 40, 70, 100] if quick else list(range(10, 101, 10))
    n = 2000 if quick else 20_000
    eta = th.eta_star(D, L_TRAIN, SIGMA2)
    out: dict[str, Any] = {"L": lengths, "n_prompts": n, "eta_star": eta,
                           "noise_floor_included": True,
                           "dgd_eta_star": [float(th.risk_dgd(eta, D, L, SIGMA2)) for L in lengths],
                           "nw_one_head": [], "models": {}}
    for L in lengths:
        out["nw_one_head"].append(monte_carlo_risk(
            single_head_kernel_regressor(D, *th.single_head_nw(D, L, SIGMA2)), task(context=L), n,
            seed=L).mean)
    for run in runs:
        risks = [monte_carlo_risk(run.model, task(context=L), n, seed=L) for L in lengths]
        out["models"][run.spec.label] = {"heads": run.spec.group["heads"],
                                         "mean": [r.mean for r in risks],
                                         "se": [r.se for r in risks],
                                         "final_train_loss": run.traj.final_loss}
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.6))
    for run in runs:
        ax0.plot(run.traj.step, run.traj.loss, lw=1, label=run.spec.label)
        m = summary["models"][run.spec.label]
        ax1.errorbar(summary["L"], m["mean"], yerr=m["se"], marker="o", ms=3, lw=1,
                     label=run.spec.label)
    ax0.axhline(th.risk_dgd(summary["eta_star"], D, L_TRAIN, SIGMA2), color="k", ls="--", lw=1,
                label="R_dGD(η*)")
    ax0.set_xlabel("Adam step")
    ax0.set_ylabel("training loss (batch)")
    ax0.set_xscale("log")
    ax0.legend(fontsize=7)
    ax1.plot(summary["L"], summary["dgd_eta_star"], "k--", lw=1, label="dGD(η*) closed form")
    ax1.plot(summary["L"], summary["nw_one_head"], "k:", lw=1, label="1-head NW (MC)")
    ax1.set_xlabel("test context length L")
    ax1.set_ylabel("MSE (σ² floor included)")
    ax1.legend(fontsize=7)
    return fig


RECIPE = Recipe("Left: training loss; right: Monte Carlo risk vs test L (trained at L = 40).",
                runs, summarize, plot)
