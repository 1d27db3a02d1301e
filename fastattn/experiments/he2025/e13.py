"""E13: length generalisation of softmax against linear attention (spec §5.7, §6 E13). Both are
trained at L = 40 and evaluated at L = 10…100. LinTF's 1/L is fixed to 1/40, so at test length L it
takes the GD step η_train·L/40: its risk is R_GD(η_train L/40, L), U-shaped around L = 40. Softmax
normalises itself: the two-head model tracks debiased GD with a fixed η and keeps improving.

Theory drawn over the Monte Carlo: R_dGD(η*) (§5.1); LinTF's closed form `risk_linear` at the
preconditioner Γ = Σ_h μ_h A_h read from its trained weights (exact for the patterned part), and
the spec's table (η_train = η_GD,opt(40) = 0.8602)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import L_TRAIN, PAIR, SIGMA2, D, one_thread, task
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.theory import he2025 as th


def runs(quick: bool = False) -> list[RunSpec]:
    """One-head LinTF (1/L fixed to 1/40) and two-head softmax, Adam at batch 256 (quick: 300
    steps at lr 1e-2; full: 2·10⁴ steps at lr 2e-3)."""
    steps, lr = (300, 1e-2) if quick else (20_000, 2e-3)
    train = {"lr": lr, "steps": steps, "n_records": 40, "n_snapshots": 2}
    return [preset_run("linear_H1", "linear_regression", "multihead_linear", group={"kind": "linear"},
                       task={"data_seed": 1},
                       model={"heads": 1, "norm_context": L_TRAIN, "init_seed": 1}, train=train),
            preset_run("softmax_H2", *PAIR, group={"kind": "softmax"}, task={"data_seed": 2},
                       model={"init_seed": 2}, train=train)]


def effective_preconditioner(model) -> np.ndarray:
    """Γ = Σ_h μ_h A_h `[d, d]` (spec M12): the GD step matrix of a patterned model."""
    kq = model.extract_kq().detach().double().numpy()
    mu = model.extract_ov().detach().double().numpy()[:, -1]
    return np.einsum("h,hij->ij", mu, kq[:, :D, :D])


def _summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    lengths = [10, 20, 40, 70, 100] if quick else list(range(10, 101, 10))
    n = 2000 if quick else 20_000
    eta_spec = th.eta_gd_opt(D, L_TRAIN, SIGMA2)
    out: dict[str, Any] = {
        "L": lengths, "L_train": L_TRAIN, "n_prompts": n, "noise_floor_included": True,
        "dgd_eta_star": [float(th.risk_dgd(th.eta_star(D, L_TRAIN, SIGMA2), D, L, SIGMA2))
                         for L in lengths],
        "linear_spec_eta_train": eta_spec,
        "linear_spec_closed": th.linear_attention_length_risk(eta_spec, lengths, L_TRAIN, D,
                                                              SIGMA2).tolist(),
        "models": {}}
    for run in runs:
        risks = [monte_carlo_risk(run.model, task(context=L), n, seed=L) for L in lengths]
        m = {"mean": [r.mean for r in risks], "se": [r.se for r in risks],
             "final_train_loss": run.traj.final_loss}
        if run.spec.group["kind"] == "linear":
            gamma = effective_preconditioner(run.model)
            m["eta_train"] = float(np.trace(gamma) / D)
            m["closed_form"] = [th.risk_linear(gamma * L / L_TRAIN, L, SIGMA2, debiased=False)
                                for L in lengths]
            m["mc_minus_closed_in_se"] = [(r.mean - c) / r.se
                                          for r, c in zip(risks, m["closed_form"], strict=True)]
            m["max_abs_mc_minus_closed_in_se"] = float(np.abs(m["mc_minus_closed_in_se"]).max())
        i40, i100 = lengths.index(L_TRAIN), lengths.index(100)
        m["risk_100_minus_risk_40_in_se"] = ((m["mean"][i100] - m["mean"][i40])
                                             / np.hypot(m["se"][i100], m["se"][i40]))
        out["models"][run.spec.label] = m
    return out


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    with one_thread():
        return _summarize(runs, quick)


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.8), layout="constrained")
    lengths = summary["L"]
    colours = {"linear_H1": "C3", "softmax_H2": "C0"}
    shown = {"linear_H1": "linear attention, H = 1", "softmax_H2": "softmax attention, H = 2"}
    for label, m in summary["models"].items():
        ax.errorbar(lengths, m["mean"], yerr=m["se"], fmt="o", ms=4, color=colours[label],
                    label=f"{shown[label]} (Monte Carlo)")
        if "closed_form" in m:
            ax.plot(lengths, m["closed_form"], "-", color=colours[label], lw=1,
                    label=f"LinTF closed form, learned η = {m['eta_train']:.3f}")
    ax.plot(lengths, summary["dgd_eta_star"], "k--", lw=1, label="dGD(η*) closed form")
    ax.plot(lengths, summary["linear_spec_closed"], ":", color="C3", lw=1,
            label=f"R_GD(η L/40), η = {summary['linear_spec_eta_train']:.3f} (spec §5.7)")
    ax.axvline(summary["L_train"], color="0.6", lw=0.8)
    ax.set_xlabel("test context length L (trained at L = 40)")
    ax.set_ylabel("MSE (σ² floor included)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    return fig


RECIPE = Recipe("Softmax keeps improving past the training length; LinTF's fixed 1/L makes it "
                "U-shaped. Points: Monte Carlo; lines: closed forms.", runs, summarize, plot)
