"""E4: trained H-head softmax attention (trained at L = 40) evaluated at L = 10…100, against
debiased GD with η* (closed form, §5.1) and the single-head kernel regressor (§1.6).

Full form: the seed grid (`settings.seed_grid`, H ∈ {1, 2, 4, 8} × 5 seeds at the paper's 5·10⁵
steps), summarised per H by the median over seeds and the number of seeds that reach dGD(η*) at
L = 40; quick form: one short run per H ∈ {1, 2}."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.patterns import pattern_metrics
from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.claims import seed_summary
from fastattn.experiments.he2025.settings import L_TRAIN, SIGMA2, D, seed_grid, task, trained_heads
from fastattn.experiments.recipe import Recipe, Run
from fastattn.models.predictors import single_head_kernel_regressor
from fastattn.theory import he2025 as th


def runs(quick: bool = False) -> list:
    return trained_heads(quick) if quick else seed_grid()


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
        m = pattern_metrics(run.model.extract_kq().detach().double().numpy(),
                            run.model.extract_ov().detach().double().numpy())
        out["models"][run.spec.label] = {
            "heads": run.spec.group["heads"], "mean": [r.mean for r in risks],
            "se": [r.se for r in risks], "final_train_loss": run.traj.final_loss,
            **{k: m[k] for k in ("omega", "mu", "gamma", "mu_plus", "eta_eff", "zero_sum",
                                 "n_dummy", "sign_match")}}
    out["by_heads"] = _by_heads(out, lengths.index(L_TRAIN))
    out["multi_head"] = _multi_head(out, lengths.index(L_TRAIN))
    return out


def _by_heads(out: dict[str, Any], at_train: int) -> dict[str, Any]:
    """Per H over its seeds: median, min and max risk at each L, the risk of every seed at the
    training length (`seed_summary`, "L_train"), and which seeds reach dGD(η*) there (within 2
    standard errors of the closed form)."""
    groups: dict[int, list[str]] = {}
    for label, m in out["models"].items():
        groups.setdefault(m["heads"], []).append(label)
    dgd = out["dgd_eta_star"][at_train]
    by_heads = {}
    for h, labels in sorted(groups.items()):
        risk = np.array([out["models"][k]["mean"] for k in labels])          # [seeds, L]
        se = np.array([out["models"][k]["se"][at_train] for k in labels])
        at_dgd = [k for k, r, e in zip(labels, risk[:, at_train], se, strict=True)
                  if abs(r - dgd) <= 2 * e]
        by_heads[f"H{h}"] = {"runs": labels, "median": np.median(risk, 0), "min": risk.min(0),
                             "max": risk.max(0), "at_dgd": at_dgd, "n_at_dgd": len(at_dgd),
                             "fraction_at_dgd": len(at_dgd) / len(labels),
                             "L_train": seed_summary(risk[:, at_train].tolist())}
    return by_heads


#: a run "has the text's limits" when γ and μ₊ are this close to 0.13 and 3.5 (He et al., Key Finding 4)
LIMIT_BAND = (0.03, 0.5)


def _multi_head(out: dict[str, Any], at_train: int) -> dict[str, Any]:
    """Every run with H ≥ 2, pooled over H and seeds (no chosen seed): γ, μ₊, η_eff = Σ_h μ_h ω_h
    and the zero-sum ratio of every run (`seed_summary`); the fraction of runs within
    `LIMIT_BAND` of the text's limits (γ, μ₊) = (0.13, 3.5); the spread of the per-H median risks
    at the training length relative to their mean; the single head's median risk over the
    multi-head one's."""
    runs = [m for m in out["models"].values() if m["heads"] >= 2]
    if not runs:
        return {}
    agg: dict[str, Any] = {"n_runs": len(runs)}
    for key in ("gamma", "mu_plus", "eta_eff", "zero_sum"):
        agg[key] = seed_summary([float(m[key]) for m in runs])
    agg["fraction_at_limits"] = float(np.mean([
        abs(m["gamma"] - 0.13) <= LIMIT_BAND[0] and abs(m["mu_plus"] - 3.5) <= LIMIT_BAND[1]
        for m in runs]))
    agg["fraction_sign_matched"] = float(np.mean([m["sign_match"] == 1 for m in runs]))
    medians = {h: g["L_train"]["median"] for h, g in out["by_heads"].items() if h != "H1"}
    agg["median_risk_relative_spread"] = float(
        (max(medians.values()) - min(medians.values())) / np.mean(list(medians.values())))
    if "H1" in out["by_heads"]:
        agg["single_over_multi_head_risk"] = float(
            out["by_heads"]["H1"]["L_train"]["median"]
            / np.median([m["mean"][at_train] for m in runs]))
    return agg


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.6))
    colors = {h: f"C{i}" for i, h in enumerate(summary["by_heads"])}
    for run in runs:
        h = f"H{run.spec.group['heads']}"
        first = run.spec.label == summary["by_heads"][h]["runs"][0]
        ax0.plot(run.traj.step, run.traj.loss, lw=0.8, color=colors[h], alpha=0.8,
                 label=h if first else None)
    for h, g in summary["by_heads"].items():
        n = len(g["runs"])
        label = h if n == 1 else f"{h}: median of {n} seeds ({g['n_at_dgd']} at dGD), min–max"
        ax1.plot(summary["L"], g["median"], marker="o", ms=3, lw=1, color=colors[h], label=label)
        if n > 1:
            ax1.fill_between(summary["L"], g["min"], g["max"], color=colors[h], alpha=0.15)
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
