"""E2: the learned (ω, μ) of H ≥ 2 heads at the end of training (spec §6 E2, text Fig. 2.2):
homogeneous |ω_h| ≈ γ, zero-sum μ, sign matching, and the pair (γ, μ₊) on the solution manifold
μ₊ = μ_γ(γ) of §5.2 (the text's limits: γ ≈ 0.13, μ₊ ≈ 3.5).

The runs are Adam on the fast stream (float32), kind "batched": `reproduce` trains them together
with the fused C++ He step (`train_many`); `summarize` reads the trained models."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.patterns import pattern_metrics
from fastattn.experiments.he2025.settings import L_TRAIN, PAIR, SIGMA2, D
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.theory import he2025 as th

#: the library's acceptance band for E2 (spec §6 E2; library choices, not the text's)
GAMMA_BAND, MU_PLUS_BAND = (0.10, 0.16), (3.0, 4.0)


def runs(quick: bool = False) -> list[RunSpec]:
    """Runs of H heads from init and data seed 100 H + s (quick: H = 2, one seed, 250 steps at lr
    1e-2, batch 128; full: H ∈ {2, 4, 8}, 2·10⁴ steps at lr 2e-3, batch 256; the paper: 5·10⁵
    steps at lr 1e-3)."""
    if quick:
        groups = [(2, (0,))]
        train = {"lr": 1e-2, "steps": 250, "batch_size": 128, "n_records": 50}
    else:
        groups = [(2, (0, 1, 2)), (4, (0, 1, 2)), (8, (0, 1))]
        train = {"lr": 2e-3, "steps": 20_000, "n_records": 100}
    train |= {"sampler": "fast", "n_snapshots": 2}
    return [preset_run(f"H{heads}_seed{seed}", *PAIR, group={"heads": heads, "seed": seed},
                       task={"data_seed": 100 * heads + seed},
                       model={"heads": heads, "init_seed": 100 * heads + seed}, train=train)
            for heads, seeds in groups for seed in seeds]


def summarize(runs: list[Run]) -> dict[str, Any]:
    cfg = runs[0].spec.train
    out: dict[str, Any] = {"steps": cfg.steps, "lr": cfg.lr, "batch_size": cfg.batch_size,
                           "eta_star": th.eta_star(D, L_TRAIN, SIGMA2),
                           "gamma_band": GAMMA_BAND, "mu_plus_band": MU_PLUS_BAND, "models": {}}
    for run in runs:
        model, heads, seed = run.model, run.spec.group["heads"], run.spec.group["seed"]
        m = pattern_metrics(model.extract_kq().detach().double().numpy(),
                            model.extract_ov().detach().double().numpy())
        gamma = float(m["gamma"])
        out["models"][run.spec.label] = {
            "heads": heads, "seed": seed, **m, "final_train_loss": run.traj.final_loss,
            "mu_gamma_at_gamma": float(th.mu_gamma(gamma, D, L_TRAIN, SIGMA2)),
            "in_band": bool(GAMMA_BAND[0] <= gamma <= GAMMA_BAND[1]
                            and MU_PLUS_BAND[0] <= m["mu_plus"] <= MU_PLUS_BAND[1]
                            and abs(m["eta_eff"] - out["eta_star"]) < 0.06
                            and m["zero_sum"] < 0.05)}
    return out


def plot(_runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    colours = {h: f"C{i}" for i, h in enumerate(sorted({m["heads"] for m in summary["models"].values()}))}
    seen = set()
    for m in summary["models"].values():
        c, h = colours[m["heads"]], m["heads"]
        label = None if h in seen else f"H = {h}"
        seen.add(h)
        ax0.scatter(m["omega"], m["mu"], color=c, s=14, label=label)
        ax1.scatter([m["gamma"]] * 2, [m["mu_plus"], -m["mu_minus"]], color=c, s=18,
                    marker="o", label=label)
    ax0.axhline(0, color="0.6", lw=0.6)
    ax0.axvline(0, color="0.6", lw=0.6)
    for x in (0.13, -0.13):
        ax0.axvline(x, color="0.5", ls="--", lw=0.8)
    ax0.set_xlabel("ω_h")
    ax0.set_ylabel("μ_h")
    ax0.set_title("every head (sign matching: quadrants I and III)", fontsize=8)
    ax0.legend(fontsize=7)
    g = np.linspace(0.04, 0.6, 200)
    ax1.plot(g, th.mu_gamma(g, D, L_TRAIN, SIGMA2), "k-", lw=1, label="μ_γ(γ): manifold S_γ")
    (g0, g1), (m0, m1) = summary["gamma_band"], summary["mu_plus_band"]
    ax1.fill_between([g0, g1], m0, m1, color="0.85", label="E2 band")
    ax1.set_xlabel("γ̂ = mean |ω_h| over live heads")
    ax1.set_ylabel("μ₊ and −μ₋")
    ax1.set_ylim(0, 8)
    ax1.set_title("(γ̂, μ₊) against the solution manifold", fontsize=8)
    ax1.legend(fontsize=7)
    return fig


RECIPE = Recipe("Learned (ω_h, μ_h) of every head; (γ̂, μ₊) against μ_γ(γ) of §5.2 and the "
                "band γ ∈ [0.10, 0.16], μ₊ ∈ [3, 4].", runs, summarize, plot)
