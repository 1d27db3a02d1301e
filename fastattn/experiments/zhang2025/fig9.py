"""Fig. 9: the merged-KQ weights of the Fig. 1 run: heads stay parallel, U_i ∝ Λ² on the plateau,
Γ(∞) = Γ* of Eq. 11."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import analysis, plots
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.zhang2025 import fig1
from fastattn.experiments.zhang2025._common import by_label, gamma_of
from fastattn.theory import zhang2025 as theory


def runs(quick: bool, init: str = "text") -> list[RunSpec]:
    return [s for s in fig1.runs(quick, init) if s.label == "attn_m"]


def abs_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.ravel(a), np.ravel(b)
    return float(abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def summarize(runs: list[Run]) -> dict[str, Any]:
    r = by_label(runs)
    run = r["attn_m"]
    task, cfg = run.spec.task, run.spec.model
    lam, e, inv_n = task.eigvals, task.eigvecs, task.inv_context_mean()
    lam2 = (e * lam**2) @ e.T
    g_star = theory.optimal_gamma(lam, e, inv_n)
    t = run.traj.snapshot_time
    t_pl = theory.merged_plateau_time(lam, fig1.s0_of(run))
    i_pl = int(np.argmin(np.abs(t - t_pl / 2)))              # half-way through the plateau
    _, u = analysis.split_merged(run.traj.params, cfg.heads, cfg.dim)    # [S, H, D, D]
    cos_pl = analysis.head_cosine_similarity(u[i_pl])
    cos_end = analysis.head_cosine_similarity(u[-1])
    gamma_end = gamma_of(run, run.traj.params[-1])
    eig_sim = np.sort(np.linalg.eigvalsh(0.5 * (gamma_end + gamma_end.T)))
    eig_th = np.sort(np.linalg.eigvalsh(g_star))
    return {
        "plateau_snapshot_time": float(t[i_pl]), "eq54_plateau_time": t_pl,
        "min_abs_head_cosine_plateau": float(np.abs(cos_pl).min()),
        "min_abs_head_cosine_end": float(np.abs(cos_end).min()),
        "participation_ratio_plateau": analysis.participation_ratio(u[i_pl]),
        "participation_ratio_end": analysis.participation_ratio(u[-1]),
        "min_cos_U_i_vs_Lambda2_plateau": min(abs_cosine(u[i_pl, h], lam2) for h in range(cfg.heads)),
        "min_cos_U_i_vs_gamma_star_end": min(abs_cosine(u[-1, h], g_star) for h in range(cfg.heads)),
        "gamma_eigenvalues_measured": eig_sim, "gamma_star_eigenvalues_eq11": eig_th,
        "gamma_eigenvalue_rel_difference": (eig_sim - eig_th) / eig_th,
        "lambda_inverse_eigenvalues": np.sort(1 / lam)}


def plot(runs: list[Run], summary: dict[str, Any]):
    run = by_label(runs)["attn_m"]
    task, cfg = run.spec.task, run.spec.model
    lam, e = task.eigvals, task.eigvecs
    g_star = theory.optimal_gamma(lam, e, task.inv_context_mean())
    _, u = analysis.split_merged(run.traj.params, cfg.heads, cfg.dim)
    t = run.traj.snapshot_time
    i_pl = int(np.argmin(np.abs(t - summary["plateau_snapshot_time"])))
    fig, axes = plots.plt.subplots(1, 4, figsize=(19, 4.4), layout="constrained")
    w1 = u[i_pl].reshape(cfg.heads, -1)
    lam2 = np.ravel((e * lam**2) @ e.T)
    plots.heatmap(axes[0], np.vstack([w1 / np.abs(w1).max(), lam2[None] / np.abs(lam2).max()]),
                  yticklabels=[*(str(h) for h in range(1, cfg.heads + 1)), "Λ²"],
                  colorbar="entry / largest |entry| of its block", cmap="RdBu_r", vmin=-1, vmax=1,
                  xlabel="entry of vec U (row-major, D×D)", ylabel="head i / Λ²")
    axes[0].axhline(cfg.heads - 0.5, color="k", lw=1.5)
    axes[0].set_title(f"(a) plateau t={t[i_pl]:.0f}: vec U_i of each head\nvs vec Λ² (last row)")
    gam = gamma_of(run, run.traj.params[-1])
    d = [str(i) for i in range(1, cfg.dim + 1)]
    plots.heatmap(axes[1], np.hstack([e.T @ gam @ e, e.T @ g_star @ e]), xticklabels=d + d,
                  yticklabels=d, colorbar="entry", aspect="equal",
                  xlabel="eigen-index d: EᵀΓ(∞)E (left) | EᵀΓ*E (right)", ylabel="eigen-index d′")
    axes[1].axvline(cfg.dim - 0.5, color="w", lw=2)
    axes[1].set_title("(b) Γ(∞) vs Γ* of Eq. 11,\nin Λ's eigenbasis")
    ax = axes[2]
    cos_l2 = [[abs_cosine(u[k, h], (e * lam**2) @ e.T) for h in range(cfg.heads)] for k in range(len(t))]
    cos_g = [[abs_cosine(u[k, h], g_star) for h in range(cfg.heads)] for k in range(len(t))]
    ax.semilogx(t[1:], np.asarray(cos_l2)[1:], color="C0", lw=0.8)
    ax.semilogx(t[1:], np.asarray(cos_g)[1:], color="C3", lw=0.8)
    ax.plot([], [], color="C0", label="|cos(U_i, Λ²)|")
    ax.plot([], [], color="C3", label="|cos(U_i, Γ*)|")
    ax.axvline(summary["eq54_plateau_time"], color="k", ls=":", label="Eq. 54")
    ax.set_xlabel("time t (τ = 1)")
    ax.set_ylabel("|cos|")
    ax.set_ylim(0.5, 1.01)
    ax.legend(fontsize=7)
    ax.set_title("(c) alignment of every head")
    ax = axes[3]
    x = np.arange(cfg.dim)
    ax.bar(x - 0.2, summary["gamma_eigenvalues_measured"], 0.4, label="Γ(∞) simulated")
    ax.bar(x + 0.2, summary["gamma_star_eigenvalues_eq11"], 0.4, label="Γ*, Eq. 11")
    ax.plot(x, summary["lambda_inverse_eigenvalues"], "k_", ms=20, label="Λ⁻¹ (N → ∞)")
    ax.set_xticks(x, [str(i) for i in x + 1])
    ax.set(xlabel="eigenvalue index (ascending)", ylabel="eigenvalue")
    ax.legend(fontsize=7)
    ax.set_title("(d) eigenvalues of Γ(∞)")
    return fig



RECIPE = Recipe(
    "Exact flow, D=4, N=31, H=8, λ=(.4,.3,.2,.1), init 1e-3 (App. C.2; option init=code). Heads stay "
    "parallel; U_i ∝ Λ² on the plateau; Γ(∞) = Γ* of Eq. 11.",
    runs, summarize, plot)
