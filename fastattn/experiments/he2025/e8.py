"""E8: the two-stage dynamics of gradient flow on the approximate loss L̃ (spec §3.4, §5.2, §6 E8),
integrated by the shared C++ integrators (`ApproxLossObjective`, RK45) as runs of kind "flow":
the reduced (ω, μ) model (`KernelRegressors`, scalar ω) with L̃ as the spec's objective override.
Time t = step × lr of the repo's GD on L̃/2 (lr 0.01; its 10⁶ steps are t = 10⁴), the record's
time; the paper's GD on L̃ (time η × steps) is at t/2 (the model card's `time`). Two heads
from ω₀ = μ₀ = (10⁻³, −10⁻³) (σ² = 0.1) and four heads from ω₀, μ₀ ~ N(0, 0.1²) (σ² = 0.01).
Stage I: ⟨μ, 1⟩ → 0 and sign matching; Stage II: |ω_h| → γ, μ₊ tracks μ_γ(γ) (drawn over the
flow) while γ drifts down."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.patterns import DUMMY_TAU
from fastattn.configs import model_card
from fastattn.experiments.he2025.settings import L_TRAIN, D
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.population.kernel_regressors import ApproxLossObjective
from fastattn.theory import he2025 as th

#: (label, heads, σ², ω₀ and μ₀) of the repo's two runs (spec §3.4)
CASES = (("H2", 2, 0.1, None), ("H4", 4, 0.01, 0))


def _init(heads: int, seed: int | None) -> np.ndarray:
    if seed is None:
        return np.array([1e-3, -1e-3, 1e-3, -1e-3])
    return np.random.default_rng(seed).normal(0, 0.1, 2 * heads)


def runs(quick: bool = False) -> list[RunSpec]:
    """The two flows to t_end = 100 (quick) or 10⁴, recorded at 0 and 121 log-spaced times from
    10⁻⁶ t_end (20 a decade)."""
    train = {"method": "flow", "t_end": 100.0 if quick else 1e4, "integrator": "rk45",
             "atol": 1e-10, "n_records": 121, "n_snapshots": 121}
    return [preset_run(label, "linear_regression", "kernel_regressors",
                       group={"heads": heads, "sigma2": s2}, init=tuple(_init(heads, seed)),
                       objective=ApproxLossObjective(heads, D, L_TRAIN, s2),
                       # init_scale: the model config's default (the run starts from `init`;
                       # the preset's 0.1 would rename the run)
                       task={"noise": s2}, model={"heads": heads, "init_scale": 0.01}, train=train)
            for label, heads, s2, seed in CASES]


def summarize(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {"t_end": runs[0].spec.train.t_end, "cases": {}}
    for run in runs:
        heads, s2, traj = run.spec.group["heads"], run.spec.group["sigma2"], run.traj
        w, m = traj.params[:, :heads], traj.params[:, heads:]
        live = np.abs(m) >= DUMMY_TAU * np.abs(m).max(-1, keepdims=True)
        gamma = np.nanmean(np.where(live, np.abs(w), np.nan), -1)
        mu_plus = np.where(w > 0, m, 0).sum(-1)
        out["cases"][run.spec.label] = {
            "heads": heads, "sigma2": s2, "time": traj.snapshot_time, "omega": w, "mu": m,
            "loss": np.interp(traj.snapshot_time, traj.time, traj.loss), "sum_mu": m.sum(-1),
            "gamma": gamma, "mu_plus": mu_plus,
            "mu_gamma_of_gamma": th.mu_gamma(gamma, D, L_TRAIN, s2),
            "eta_eff": (m * w).sum(-1), "eta_star": th.eta_star(D, L_TRAIN, s2),
            "final_sign_match": bool(np.all((w[-1] * m[-1] > 0) | ~live[-1])),
            "final_mu_plus_over_mu_gamma": float(mu_plus[-1] / th.mu_gamma(gamma[-1], D, L_TRAIN, s2)),
            "final_abs_sum_mu_over_mu_plus": float(abs(m[-1].sum()) / abs(mu_plus[-1])),
            "final_gamma_cv": float(np.nanstd(np.where(live[-1], np.abs(w[-1]), np.nan))
                                    / gamma[-1]),
            "final_eta_eff": float((m[-1] * w[-1]).sum()),
            "n_evals": traj.n_evals, "wall_time": traj.wall_time}
    return out


def plot(_runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    cases = summary["cases"]
    fig, axes = plt.subplots(len(cases), 3, figsize=(11, 3.0 * len(cases)), layout="constrained",
                             squeeze=False)
    for row, c in zip(axes, cases.values(), strict=True):
        t = np.maximum(np.asarray(c["time"]), 1e-3)
        w, m = np.asarray(c["omega"]), np.asarray(c["mu"])
        for h in range(c["heads"]):
            row[0].plot(t, w[:, h], lw=1, label=f"ω_{h + 1}")
            row[1].plot(t, m[:, h], lw=1, label=f"μ_{h + 1}")
        row[1].plot(t, c["sum_mu"], "k:", lw=1, label="⟨μ, 1⟩")
        row[1].plot(t, c["mu_gamma_of_gamma"], "k--", lw=1, label="μ_γ(γ̂)")
        row[2].plot(t, c["eta_eff"], lw=1, label="η_eff = ⟨μ, ω⟩")
        row[2].plot(t, c["loss"], lw=1, label="L̃")
        row[2].axhline(c["eta_star"], color="k", ls="--", lw=1, label="η*")
        row[1].set_ylim(-1.2 * np.abs(m[-1]).max(), 1.2 * np.abs(m[-1]).max())
        for ax, ylabel in zip(row, ("ω_h", "μ_h", "η_eff and L̃"), strict=True):
            ax.set_xscale("log")
            ax.axvspan(5.5, 7.5, color="0.9")
            ax.set_xlabel(f"t = step × lr of the authors' GD on L̃/2; "
                          f"{model_card('kernel_regressors').time.describe()}", fontsize=7)
            ax.set_ylabel(ylabel)
            ax.set_title(f"H = {c['heads']}, σ² = {c['sigma2']:g}", fontsize=8)
            ax.legend(fontsize=7)
    return fig


RECIPE = Recipe("Gradient flow on L̃: Stage I (⟨μ,1⟩ → 0, sign matching; shaded: the repo's stage "
                "marks), Stage II (|ω| → γ, μ₊ on μ_γ(γ)).", runs, summarize, plot)
