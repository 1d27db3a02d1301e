"""E12: normalised activations σ_f(ν)_i = f(ν_i)/Σ_j f(ν_j) with f ∈ {exp, 1 + Cx, (1 + Cx)², 1 + tanh x}
in a two-head model (spec §1.7, §5.9, §6 E12; C = 1). Measured: ‖ω‖_∞(t) (1 + tanh: rise then fall,
like softmax), sign matching, and η_eff = 2 C_f ‖ω‖_∞ ‖μ‖_∞ (C_f = 1, 1, 2, 1) against η*; the risk
against R_dGD(η_eff) (closed form, the predictor §5.9 says the pair implements).

Quick: the reduced two-head kernel model (`KernelRegressors`, the §5.9 formula itself) from
N(0, 0.1²); full: the full `MultiHeadSoftmax` from PyTorch's init."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import L_TRAIN, SIGMA2, D, one_thread, task
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.models import build_model
from fastattn.theory import he2025 as th

#: activation → C_f, the slope of f at 0 (C = 1)
C_F = {"exp": 1.0, "linear": 1.0, "square": 2.0, "tanh": 1.0}


def runs(quick: bool = False) -> list[RunSpec]:
    steps, lr = (400, 2e-2) if quick else (20_000, 2e-3)
    # quick: the reduced (ω, μ) model of the (linear_regression, kernel_regressors) preset
    model = "kernel_regressors" if quick else "multihead_softmax"
    train = {"lr": lr, "steps": steps, "n_records": 40, "n_snapshots": 30}
    if quick:
        train["batch_size"] = 128
    return [preset_run(act, "linear_regression", model, group={"activation": act},
                       task={"data_seed": 20 + i}, model={"activation": act, "init_seed": i},
                       train=train) for i, act in enumerate(C_F)]


def omega_mu(model) -> tuple[np.ndarray, np.ndarray]:
    """(ω_h, μ_h) `[H]` each, of the reduced or the full model."""
    if model.kind == "kernel_regressors":
        return model.omega.detach().double().numpy(), model.mu.detach().double().numpy()
    kq = model.extract_kq().detach().double().numpy()
    return np.trace(kq[:, :D, :D], axis1=1, axis2=2) / D, model.extract_ov().detach().double().numpy()[:, D]


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    n = 2000 if quick else 20_000
    eta_star = th.eta_star(D, L_TRAIN, SIGMA2)
    out: dict[str, Any] = {"eta_star": eta_star, "n_prompts": n, "C_f": C_F, "models": {}}
    with one_thread():
        for run in runs:
            act = run.spec.group["activation"]
            snap = build_model(run.spec.model)
            omega_inf = []
            for flat in run.traj.params:
                snap.load_flat(flat)
                omega_inf.append(float(np.abs(omega_mu(snap)[0]).max()))
            w, m = omega_mu(run.model)
            eta = 2 * C_F[act] * np.abs(w).max() * np.abs(m).max()
            r = monte_carlo_risk(run.model, task(), n, seed=9)
            out["models"][act] = {
                "omega": w, "mu": m, "sign_match": bool(np.all(w * m > 0)),
                "opposite_heads": bool(w[0] * w[1] < 0), "eta_eff": float(eta),
                "risk": r.mean, "risk_se": r.se,
                "dgd_at_eta_eff": float(th.risk_dgd(eta, D, L_TRAIN, SIGMA2)),
                "step": np.rint(run.traj.snapshot_time / (2 * run.spec.train.lr)),
                "omega_inf": omega_inf, "omega_inf_peak_over_final": max(omega_inf) / omega_inf[-1],
                "final_train_loss": run.traj.final_loss}
    models = out["models"].values()
    # the text's "same emergent patterns" for every f: a ± pair, each head sign-matched
    out["fraction_patterned"] = float(np.mean([m["sign_match"] and m["opposite_heads"]
                                               for m in models]))
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9.5, 3.6), layout="constrained")
    acts = list(summary["models"])
    for i, act in enumerate(acts):
        m = summary["models"][act]
        ax0.plot(np.maximum(m["step"], 1), m["omega_inf"], color=f"C{i}", label=act)
        ax1.errorbar([i], [m["risk"]], yerr=[m["risk_se"]], fmt="o", color=f"C{i}")
        ax1.plot([i], [m["dgd_at_eta_eff"]], "x", color="k", ms=8,
                 label="R_dGD(η_eff) closed form" if i == 0 else None)
    ax1.axhline(th.risk_dgd(summary["eta_star"], D, L_TRAIN, SIGMA2), color="k", ls="--", lw=1,
                label="R_dGD(η*)")
    ax0.set_xscale("log")
    ax0.set_xlabel("Adam step")
    ax0.set_ylabel("‖ω‖_∞")
    ax0.legend(fontsize=7)
    ax1.set_xticks(range(len(acts)), acts)
    ax1.set_xlabel("activation f")
    ax1.set_ylabel("MSE (MC; σ² floor included)")
    ax1.legend(fontsize=7)
    return fig


RECIPE = Recipe("Two heads with normalised activations: ‖ω‖_∞ during training; the risk against "
                "dGD with η_eff = 2 C_f ‖ω‖_∞ ‖μ‖_∞.", runs, summarize, plot)
