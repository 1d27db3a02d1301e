"""Figure recipes of Zhang, Singh, Latham & Saxe (ICML 2025): simulation with the theory drawn over it.

Defaults follow the paper's *text* (1/N context normalisation, App. C.2 initialisation, the
captions' spectra); where the public code differs the recipe offers it as an option and the caption
says which is used. Exact population gradient flow is used wherever the figure shows the theory's
setting; sampled training where the figure is about sampled or softmax training (Figs. 1 right, 5, 14).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import analysis, plots, population
from fastattn.experiments.registry import Recipe, Run, RunSpec, plateau_table, register
from fastattn.models import ModelConfig
from fastattn.tasks import LinearRegression, spectrum
from fastattn.theory import zhang2025 as theory
from fastattn.train import TrainConfig

D4 = (0.4, 0.3, 0.2, 0.1)          # Figs. 1, 3, 5, 6, 8, 11
N = 31                              # the code's seq_len 32 = N + 1
SPECTRUM_D8 = {"text": "inverse", "code": "linear"}   # Fig. 4/12 captions vs the code's gen_cov


def _task(eigvals, seed: int = 0, context: Any = N, **kw) -> LinearRegression:
    return LinearRegression(len(eigvals), context=context, spectrum=tuple(eigvals), rotate=True,
                            rotation_seed=seed, **kw)


def _flow(t_end: float, snapshots: int = 40, **kw) -> TrainConfig:
    return TrainConfig(method="flow", t_end=t_end, n_snapshots=snapshots, **kw)


def _levels(task: LinearRegression) -> np.ndarray:
    return theory.fixed_point_losses(task.eigvals, task.inv_context_mean())


def _loss_panel(ax, runs: list[Run], levels=None, label_key: str | None = None, x: str = "time"):
    plots.loss_axes(ax, log_time=True, xlabel="time t (τ = 1)" if x == "time" else "step")
    for run in runs:
        label = f"{label_key}={run.spec.group[label_key]}" if label_key else None
        plots.plot_loss(ax, run.traj, label=label, x=x, lw=1.2)
    if levels is not None:
        plots.draw_levels(ax, levels, label="theory (Eq. 19)")
    ax.legend(fontsize=7)


def _level_summary(runs: list[Run]) -> dict[str, Any]:
    out = {}
    for run in runs:
        out[run.spec.label] = plateau_table(run.traj, _levels(run.spec.task))
    return out


# ------------------------------------------------------------------------------------- Fig. 3
def _fig3_runs(quick: bool, heads: str = "text") -> list[RunSpec]:
    h = 4 if heads == "text" else 5
    seeds = range(2 if quick else 6)
    return [RunSpec(f"seed{s}", _task(D4, seed=s),
                    ModelConfig("separate", 4, h, 1, init_scale=1e-2, init_seed=s),
                    _flow(3e5 if not quick else 1e5, snapshots=3000 if not quick else 1000),
                    {"seed": s}) for s in seeds]


def _learned_order(run: Run) -> list[int]:
    """Eigen-direction learned at each drop: the diagonal entry of EᵀΓE that rises first."""
    task, cfg = run.spec.task, run.spec.model
    e = task.eigvecs
    diag = []
    for p in run.traj.params:
        g = population.gamma("separate", p, (cfg.dim, cfg.heads, cfg.rank))
        diag.append(np.diag(e.T @ g @ e))
    diag = np.asarray(diag)                                          # [S, D]
    target = task.eigvals / theory.b_eigenvalues(task.eigvals, task.inv_context_mean())
    half = diag / target > 0.5
    first = [int(np.argmax(half[:, d])) if half[:, d].any() else len(half) for d in range(cfg.dim)]
    return [int(d) for d in np.argsort(first, kind="stable")]


def _value_fits(run: Run) -> list[dict[str, float]]:
    """Each learning head's |v_i(t)| against Eq. 21 (closed form Eq. 71) after a fitted time shift."""
    task, cfg = run.spec.task, run.spec.model
    lam, inv_n = task.eigvals, task.inv_context_mean()
    a = theory.b_eigenvalues(lam, inv_n)
    t = run.traj.snapshot_time
    v = np.abs(analysis.value_weights(run.traj.params, cfg.heads))       # [S, H]
    _, k, _ = analysis.split_separate(run.traj.params[-1], cfg.heads, cfg.rank, cfg.dim)
    direction = analysis.best_aligned(k[:, 0], task.eigvecs)
    fits = []
    for h in range(cfg.heads):
        d = int(direction[h])
        v_star = theory.drop_stable_value(lam[d], a[d])
        if v[-1, h] < 0.5 * v_star:
            continue  # this head did not learn a direction
        # Eq. 21 from v(0) = v*/100; the shift absorbs the history-dependent start. It is first
        # matched at the half-way crossing, then refined by least squares where v > v*/20.
        v0 = v_star / 100
        half_model = float(theory.drop_time(v_star / 2, v0, lam[d], a[d]))
        half_sim = float(np.interp(v_star / 2, v[:, h], t)) if np.all(np.diff(v[:, h]) >= 0) \
            else float(t[np.argmax(v[:, h] >= v_star / 2)])
        guess = half_sim - half_model
        t_model = guess + np.linspace(0, 4 * half_model, 4000)
        v_model = theory.drop_trajectory(t_model - guess, v0, lam[d], a[d])
        keep = (v[:, h] > v_star / 20) & (t < guess + 3 * half_model)
        width = 0.05 * half_model
        delta, resid = analysis.fit_time_shift(t[keep], v[keep, h], t_model, v_model,
                                               log_time=False, log_loss=True,
                                               bounds=(-width, width))
        shift = guess + delta
        fits.append({"head": h, "direction": d, "v_star": v_star, "v_final": float(v[-1, h]),
                     "time_shift": shift, "residual": resid})
    return fits


def _fig3_summary(runs: list[Run]) -> dict[str, Any]:
    out = {"levels": _level_summary(runs)}
    out["learned_order"] = {r.spec.label: _learned_order(r) for r in runs}
    out["value_weight_fits"] = {r.spec.label: _value_fits(r) for r in runs}
    return out


def _fig3_plot(runs: list[Run], summary: dict[str, Any]):
    fig, axes = plots.plt.subplots(1, 3, figsize=(15, 4.2))
    _loss_panel(axes[0], runs, _levels(runs[0].spec.task), label_key="seed")
    axes[0].set_title("(a) loss: D drops, plateaus at Eq. 19")
    run = runs[0]
    cfg, task = run.spec.model, run.spec.task
    t = run.traj.snapshot_time
    v = np.abs(analysis.value_weights(run.traj.params, cfg.heads))
    ax = axes[1]
    plots.loss_axes(ax, log_time=False)
    ax.set_ylabel("|v_i|")
    a = theory.b_eigenvalues(task.eigvals, task.inv_context_mean())
    for h in range(cfg.heads):
        ax.plot(t, v[:, h], lw=1.5, label=f"head {h}")
    for fit in summary["value_weight_fits"][run.spec.label]:
        d = fit["direction"]
        tt = np.linspace(max(t[1], fit["time_shift"]), t[-1], 400)
        ax.plot(tt, theory.drop_trajectory(tt - fit["time_shift"], fit["v_star"] / 100,
                                           task.eigvals[d], a[d]), "k--", lw=0.8)
    ax.plot([], [], "k--", lw=0.8, label="Eq. 21 (shifted)")
    ax.set_xlim(0, t[-1] / 3)
    ax.legend(fontsize=7)
    ax.set_title("(b) value weights vs the scalar ODE")
    _, k, _ = analysis.split_separate(run.traj.params[-1], cfg.heads, cfg.rank, cfg.dim)
    im = axes[2].imshow(analysis.alignment(k[:, 0], task.eigvecs), vmin=0, vmax=1, cmap="viridis")
    axes[2].set_xlabel("eigenvector e_d (λ descending)")
    axes[2].set_ylabel("head i")
    axes[2].set_title("(c) |cos(k_i, e_d)| at the end")
    fig.colorbar(im, ax=axes[2])
    return fig


register(Recipe(
    "zhang2025-fig3", "Zhang et al. 2025, Fig. 3: separate-KQ linear attention, rank 1",
    "Exact population gradient flow, D=4, N=31, λ=(.4,.3,.2,.1), init 1e-2 (App. C.2), H=4 (caption; "
    "option heads=code gives the code's H=5). Dashed: plateau levels of Eq. 19.",
    _fig3_runs, _fig3_summary, _fig3_plot, options={"heads": ("text", "code")}))


# ------------------------------------------------------------------------------------- shared
W_INIT_M = 1e-3                     # merged / MLP init scale (App. C.2 scheme by default)
SCHEMES = {"text": "paper", "code": "code"}


def _by_label(runs: list[Run]) -> dict[str, Run]:
    return {r.spec.label: r for r in runs}


def _spectrum8(option: str) -> np.ndarray:
    return spectrum(SPECTRUM_D8[option], 8)


def _rk45(t_end: float, records: int = 800, snapshots: int = 60) -> TrainConfig:
    # the stiff integrator's Hessian makes rank R > 1 runs slow; explicit RK45 is much faster here
    return TrainConfig(method="flow", t_end=t_end, integrator="rk45", n_records=records,
                       n_snapshots=snapshots)


def _gamma(run: Run, params: np.ndarray) -> np.ndarray:
    cfg = run.spec.model
    family = "separate" if cfg.name == "separate" else "merged"
    return population.gamma(family, params, (cfg.dim, cfg.heads, cfg.rank))


def _nearest_m(level: float, levels: np.ndarray) -> int:
    return int(np.argmin(np.abs(np.log(levels) - np.log(level))))


MIN_DECADES = 0.1     # a plateau lasting at least a factor 10^0.1 ≈ 1.26 in time counts as conspicuous


def _conspicuous(run: Run, min_decades: float = MIN_DECADES) -> dict[str, Any]:
    """Conspicuous plateaus of a run (not counting the converged level) against the rank-R rule."""
    task, cfg = run.spec.task, run.spec.model
    levels = _levels(task)
    plateaus, drops = analysis.find_plateaus_and_drops(run.traj.time, run.traj.loss)
    found = [p for p in analysis.conspicuous_plateaus(plateaus, min_decades, include_last=True)
             if not (p.reaches_end and _nearest_m(p.level, levels) == len(levels) - 1)]
    ms = [_nearest_m(p.level, levels) for p in found]
    predicted = theory.conspicuous_plateau_ms(cfg.dim, cfg.rank)
    return {"rank": cfg.rank, "n_conspicuous": len(found), "predicted_n": len(predicted),
            "ms_measured": ms, "ms_predicted": predicted,
            "levels_measured": [p.level for p in found],
            "levels_predicted": [float(levels[m]) for m in ms],
            "max_rel_level_difference": float(max((abs(p.level - levels[m]) / levels[m]
                                                   for p, m in zip(found, ms, strict=True)), default=0.0)),
            "durations_decades": [p.decades for p in found],
            "final_loss": float(run.traj.loss[-1]), "L_star": float(levels[-1]),
            "n_drops": len(drops)}


# ------------------------------------------------------------------------------------- Fig. 1
def _aligned_merged_init(dim: int, heads: int, s0: float) -> tuple[float, ...]:
    """The balanced, aligned init of App. D.5: W₁ = w₂ mᵀ with m = vec(I)/√D (∝ E(y_q z) for Λ ∝ I),
    i.e. U_i = v_i I/√D with equal v_i and Σ v_i² = s0, so Γ = s0 I/√D."""
    v = np.full(heads, np.sqrt(s0 / heads))
    u = v[:, None, None] * np.eye(dim)[None] / np.sqrt(dim)
    return tuple(np.concatenate([v, u.ravel()]).tolist())


def _fig1_runs(quick: bool, init: str = "text") -> list[RunSpec]:
    scheme = SCHEMES[init]
    task = _task(D4)
    merged = ModelConfig("merged", 4, 8, init_scale=W_INIT_M, init_seed=0, init_scheme=scheme)
    mlp = ModelConfig("cubic_mlp", 4, 8, init_scale=W_INIT_M, init_seed=0, init_scheme=scheme)
    # explicit RK45 at tight tolerances: faster and more accurate than "stiff" for these smooth flows
    flow = TrainConfig(method="flow", t_end=1e3, integrator="rk45", n_records=600, n_snapshots=200,
                       rtol=1e-10, atol=1e-14)
    sgd = TrainConfig(method="sgd", lr=0.2, steps=40 if quick else 300, batch_size=256,
                      n_records=40 if quick else 150, n_snapshots=10)
    white = LinearRegression(4, context=N, spectrum=(1.0, 1.0, 1.0, 1.0))
    wflow = TrainConfig(method="flow", t_end=30.0, integrator="rk45", n_records=600, n_snapshots=20,
                        rtol=1e-11, atol=1e-15)
    return [RunSpec("attn_m", task, merged, flow, {"panel": "flow"}),
            RunSpec("mlp", task, mlp, flow, {"panel": "flow"}),
            RunSpec("attn_m_sgd", task, merged, sgd, {"panel": "sgd"}),
            RunSpec("mlp_sgd", task, mlp, sgd, {"panel": "sgd"}),
            RunSpec("white_aligned", white, merged, wflow, {"panel": "white", "init": "aligned"},
                    init=_aligned_merged_init(4, 8, W_INIT_M**2)),
            RunSpec("white_random", white, merged, wflow, {"panel": "white", "init": init})]


def _s0(run: Run) -> float:
    return float(np.sum(analysis.value_weights(run.traj.params[0], run.spec.model.heads) ** 2))


def _white_theory(run: Run, s0: float, t: np.ndarray) -> np.ndarray:
    task = run.spec.task
    return theory.white_merged_loss(t, s0, task.dim, task.inv_context_mean(), c=float(task.eigvals[0]))


def _fig1_summary(runs: list[Run]) -> dict[str, Any]:
    r = _by_label(runs)
    a, m = r["attn_m"], r["mlp"]
    task = a.spec.task
    lstar = theory.minimum_loss(task.eigvals, task.inv_context_mean())
    _, drops = analysis.find_plateaus_and_drops(a.traj.time, a.traj.loss)
    s0 = _s0(a)
    t_mid = float(np.interp(0.5, -(a.traj.loss - lstar) / (a.traj.loss[0] - lstar) + 1, a.traj.time))
    out: dict[str, Any] = {"flow": {
        "final_loss": float(a.traj.loss[-1]), "L_star_eq11": lstar,
        "final_minus_L_star": float(a.traj.loss[-1] - lstar),
        "n_drops": len(drops), "drop_time": drops[0].time if drops else float("nan"),
        "half_way_time": t_mid,
        "s0": s0, "eq54_plateau_time_s0": theory.merged_plateau_time(task.eigvals, s0),
        "eq54_plateau_time_w_init": theory.merged_plateau_time(task.eigvals, a.spec.model.init_scale ** 2),
        "max_abs_loss_diff_attn_vs_mlp": float(np.max(np.abs(a.traj.loss - m.traj.loss)))}}
    a2, m2 = r["attn_m_sgd"], r["mlp_sgd"]
    out["sgd"] = {"final_loss_attn": float(a2.traj.loss[-1]), "final_loss_mlp": float(m2.traj.loss[-1]),
                  "max_abs_loss_diff": float(np.max(np.abs(a2.traj.loss - m2.traj.loss))),
                  "max_abs_param_diff": float(np.max(np.abs(a2.traj.params - m2.traj.params)))}
    wa, wr = r["white_aligned"], r["white_random"]
    s0a, s0r = _s0(wa), _s0(wr)
    err = np.abs(wa.traj.loss - _white_theory(wa, s0a, wa.traj.time))
    # fit on a uniform linear-time grid (the records are log-spaced, which would weight t ≈ 0)
    tm = np.linspace(0, wr.traj.time[-1], 20001)
    tu = np.linspace(0, wr.traj.time[-1], 3001)
    lu = np.interp(tu, wr.traj.time, wr.traj.loss)
    w_init2 = wr.spec.model.init_scale ** 2
    shift, resid = analysis.fit_time_shift(tu, lu, tm, _white_theory(wr, w_init2, tm),
                                           log_time=False, log_loss=True, bounds=(-5.0, 5.0))
    shift_a, resid_a = analysis.fit_time_shift(tu, lu, tm, _white_theory(wr, s0r, tm),
                                               log_time=False, log_loss=True, bounds=(-5.0, 5.0))
    out["white"] = {"aligned_s0": s0a, "aligned_max_abs_error_eq51": float(err.max()),
                    "random_s0": s0r, "w_init_squared": w_init2,
                    "random_time_shift_vs_eq51_s0_w_init2": shift, "random_rms_log_residual": resid,
                    "random_time_shift_vs_eq51_s0_actual": shift_a,
                    "random_rms_log_residual_s0_actual": resid_a,
                    "L_final": float(wr.traj.loss[-1]),
                    "L_inf_eq51": float(_white_theory(wr, w_init2, np.array([1e9]))[0])}
    return out


def _fig1_plot(runs: list[Run], summary: dict[str, Any]):
    r = _by_label(runs)
    fig, axes = plots.plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    plots.loss_axes(ax, log_time=True)
    plots.plot_loss(ax, r["attn_m"].traj, label="ATTN_M (H=8)", lw=2.5, alpha=0.6)
    plots.plot_loss(ax, r["mlp"].traj, label="2-layer MLP on z", lw=1.0, ls="--", color="k")
    plots.draw_levels(ax, [1.0, summary["flow"]["L_star_eq11"]], label="tr Λ and L* (Eq. 11)")
    ax.axvline(summary["flow"]["eq54_plateau_time_s0"], color="C3", ls=":", label="plateau end, Eq. 54")
    ax.set_xlim(1e-1, None)
    ax.legend(fontsize=7)
    ax.set_title("(a) exact flow: one sigmoid drop to L*")
    ax = axes[1]
    plots.loss_axes(ax, log_time=False)
    ax.plot(r["attn_m_sgd"].traj.time, r["attn_m_sgd"].traj.loss, lw=2.5, alpha=0.6, label="ATTN_M, SGD")
    ax.plot(r["mlp_sgd"].traj.time, r["mlp_sgd"].traj.loss, "k--", lw=1, label="MLP, SGD (same batches)")
    ax.set_title(f"(b) SGD, mapped init: max |ΔL| = {summary['sgd']['max_abs_loss_diff']:.1e}")
    ax.legend(fontsize=7)
    ax = axes[2]
    plots.loss_axes(ax, log_time=False)
    wa, wr = r["white_aligned"], r["white_random"]
    w = summary["white"]
    ax.plot(wa.traj.time, wa.traj.loss, lw=2.5, alpha=0.5, label="aligned init (flow)")
    ax.plot(wr.traj.time, wr.traj.loss, lw=2.5, alpha=0.5, label="random init C.2 (flow)")
    tt = np.linspace(0, wa.traj.time[-1], 2000)
    ax.plot(tt, _white_theory(wa, w["aligned_s0"], tt), "k--", lw=1, label="Eq. 51")
    sh = w["random_time_shift_vs_eq51_s0_w_init2"]
    ax.plot(tt, _white_theory(wr, w["w_init_squared"], np.clip(tt - sh, 0, None)), "k:", lw=1,
            label=f"Eq. 51 shifted {sh:+.2f}")
    ax.set_xlim(0, 12)
    ax.set_title(f"(c) Λ = I: |err| ≤ {w['aligned_max_abs_error_eq51']:.1e} (aligned)")
    ax.legend(fontsize=7)
    return fig


register(Recipe(
    "zhang2025-fig1", "Zhang et al. 2025, Fig. 1: merged-KQ attention ≡ 2-layer MLP on cubic features",
    "D=4, N=31, H=8, λ=(.4,.3,.2,.1), init 1e-3 (App. C.2 scheme; option init=code: per-entry N(0, init²)). "
    "(a) exact flow, (b) SGD with the same batches, (c) Λ = I vs Eq. 51.",
    _fig1_runs, _fig1_summary, _fig1_plot, options={"init": ("text", "code")}))
