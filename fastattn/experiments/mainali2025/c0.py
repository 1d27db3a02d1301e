"""Figs. 1–3 of Mainali & Teixeira 2025 on the canonical configuration C0 (spec §9.0; the paper gives
no numbers): d = 4, s = (2, 1, .5, .25), N = 32, P = 64 fixed tasks (seed 0), η = 0.01 (ηP = 0.64),
batch 64 (mean), aligned init p2 = q1 = 0.01·I (a⁰ = 1e-4), reduced model (p1 = q2 = 0 frozen).

Two runs: task-centric SGD and the exact population flow of the same task set (its Ω), both in
epochs (t = τ/(2ηP)); the paper's closed form (Eqs. 11–14) is computed beside them, with ω = 1
and with the ω-corrected timescales τ_α = 1/(ηP ω_α s_α²) of the finite task set (spec §6.8).
Beside them, `summary.exact_omega1` integrates the exact population flow at ω = 1 (the paper's task
distribution) to its endpoint: the runs against which the claims check Eqs. 11–14 at C0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import least_squares

from fastattn import plots
from fastattn.configs import resolve
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.population import aligned_flow
from fastattn.tasks import WishartTasks
from fastattn.theory import mainali2025 as th
from fastattn.training.build import build_task

#: the pair whose preset is C0 (`fastattn.configs.mainali2025.C0`); the figures state only what
#: differs from it
PAIR = ("wishart_tasks", "linear_transformer")
_C0 = resolve(*PAIR)
#: C0's d, N, P, η and init scale, for the closed forms the figures compare with
D, N, P = (_C0.task[k] for k in ("dim", "context", "tasks"))
LR, INIT = _C0.train["lr"], _C0.model["init_scale"]
ETA_P = LR * P
#: the setting the three figures share; each caption leads with what its figure shows
SETTING = ("C0 (spec §9.0; the paper states no settings): d=4, s=(2,1,.5,.25), N=32, P=64 tasks "
           "(seed 0), η=0.01, batch 64 (mean), p2=q1=0.01·I, reduced model; exact flow: the "
           "population flow of the same task set (full Wishart coupling, its Ω).")
#: the exact flow's tolerances: the figures compare its trajectory with closed forms to ~1e-8
FLOW = {"method": "flow", "rtol": 1e-10, "atol": 1e-14}


def c0_task() -> WishartTasks:
    return build_task(_C0.task)


def runs(quick: bool) -> list[RunSpec]:
    """Task-centric SGD and the exact flow over C0's 250 epochs (quick: 4 epochs, batch 32)."""
    sgd = {"steps": P * 4, "batch_size": 32, "n_records": 100} if quick else {}
    flow = FLOW | {"n_snapshots": 400} | ({"t_end": 2 * ETA_P * 4} if quick else {})
    return [preset_run("sgd", *PAIR, group={"method": "task_sgd"}, train=sgd),
            preset_run("flow", *PAIR, group={"method": "flow"}, train=flow)]


def paper_at_omega(t: np.ndarray, s: np.ndarray, omega: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The paper's closed form at a task set's ω = diag Ω (spec §6.8): a_α(t) of Eq. 13 with
    τ_α/ω_α `[T, d]`, and Eq. 14 with each mode's terms weighted by ω_α `[T]` (the ω-weighted
    L(∞) of spec §9.0), for C0's N, ηP and a⁰ at epochs `t` `[T]`."""
    paper = th.paper_theory(s, N, ETA_P, INIT**2)
    a0 = INIT**2
    a = paper.a_inf * a0 / (a0 + (paper.a_inf - a0) * np.exp(-2 * np.asarray(t)[:, None] * omega / paper.tau))
    loss = 0.5 * (omega * s * (s * paper.s_inf * a**2 - 2 * s * a + 1)).sum(-1)
    return a, loss


def products(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """(epochs `[S]`, Uᵀ p2 q1 U `[S, d, d]`) from a run's parameter snapshots."""
    u = run.spec.task.U
    blocks = run.traj.params.reshape(len(run.traj.params), 4, D, D)
    return run.traj.snapshot_time / (2 * ETA_P), np.einsum("ji,tjk,tkl,lm->tim", u, blocks[:, 1],
                                                           blocks[:, 2], u)


def logit_fit(t: np.ndarray, a: np.ndarray, final: float, rate0: float) -> tuple[float, float]:
    """Eq. 13 says a/a^∞ is a logistic in t: the least-squares logistic σ(k (t − t₀)) through the
    whole trajectory a/final `[T]` (started from Eq. 13's rate `rate0` = 2/τ_α and the half time);
    (k, the largest |a/final − σ(k (t − t₀))| over the trajectory). NaN, NaN when a never reaches
    half of final (the mode has not risen)."""
    r = np.asarray(a, dtype=np.float64) / final
    half = th.half_times(t, r[:, None], np.ones(1))[0]
    if not np.isfinite(half):
        return float("nan"), float("nan")
    fit = least_squares(lambda x: 1 / (1 + np.exp(-x[0] * rate0 * (t - x[1]))) - r, [1.0, half])
    return float(fit.x[0] * rate0), float(np.abs(fit.fun).max())


def omega1_flow(s: np.ndarray, paper: th.PaperTheory) -> dict[str, Any]:
    """The exact population flow of the aligned model on the paper's task distribution (ω = 1,
    `aligned_flow.exact_flow`, the C++ objective integrated to 5000 epochs from C0's init) against
    Eqs. 11–14 evaluated at C0: its endpoint (a, L), its half times, its logistic rates (in units of
    Eq. 13's 2/τ_α), its loss at each plateau (the geometric middle of consecutive half times, in
    units of Eq. 14's level) and its initial slope; beside it, the closed-form exact optimum of
    spec §6.4 (`exact_optimum`) and its relative deviation from the flow's endpoint."""
    p0 = np.full(D, INIT)
    grid = np.concatenate([[0.0], np.geomspace(1e-3, 5e3, 3000)])
    flow = aligned_flow.exact_flow(s, N, ETA_P, p0, p0, grid)
    a_end, loss_end = flow.a[-1], float(flow.loss[-1])
    a_star, l_star = th.exact_optimum(s, N)
    t_half = th.half_times(flow.t, flow.a, a_end)
    fits = [logit_fit(flow.t, flow.a[:, k], a_end[k], 2 / paper.tau[k]) for k in range(D)]
    levels = th.plateau_levels(s, N)
    mid = np.sqrt(t_half[:-1] * t_half[1:])
    return {"a_star": a_star, "loss_star": l_star, "a_end": a_end, "loss_end": loss_end,
            "closed_vs_flow_a": float(np.abs(a_star / a_end - 1).max()),
            "closed_vs_flow_loss": abs(l_star / loss_end - 1),
            "t_half": t_half, "t_half_over_eq13": t_half / paper.t_half,
            "logistic_rate_over_eq13": np.array([k for k, _ in fits]) * paper.tau / 2,
            "plateau_mid_t": mid, "plateau_loss": np.interp(mid, flow.t, flow.loss),
            "plateau_over_eq14": np.interp(mid, flow.t, flow.loss) / levels[1:D],
            "initial_slope": float((flow.loss[1] - flow.loss[0]) / flow.t[1]),
            "initial_slope_eq14": float(-2 * ETA_P * (paper.a0 * s**4
                                                      * (1 - paper.s_inf * paper.a0)**2).sum())}


def _stage_order(s: np.ndarray, t_half: np.ndarray, final: np.ndarray) -> dict[str, float]:
    """How a run's stages follow §3's t*_α ∝ 1/s_α²: the pairs of modes learned out of the order of
    decreasing s, and the least-squares slope of ln(t_half_α / ln((a_α − a⁰)/a⁰)) against ln s_α
    (Eq. 13: −2). NaN unless every mode has a half time."""
    if not np.all(np.isfinite(t_half)):
        return {"stage_order_inversions": float("nan"), "stage_time_exponent": float("nan")}
    order = np.argsort(-s)
    th_ = np.asarray(t_half)[order]
    inversions = sum(int(th_[i] > th_[j]) for i in range(D) for j in range(i + 1, D))
    tau = th_ / np.log((np.asarray(final)[order] - INIT**2) / INIT**2)
    return {"stage_order_inversions": float(inversions),
            "stage_time_exponent": float(np.polyfit(np.log(s[order]), np.log(tau), 1)[0])}


def _by_label(runs_: list[Run]) -> dict[str, Run]:
    return {r.spec.label: r for r in runs_}


def summarize(runs_: list[Run]) -> dict[str, Any]:
    r = _by_label(runs_)
    task = r["sgd"].spec.task
    s, omega = task.s, np.diag(task.omega())
    paper = th.paper_theory(s, N, ETA_P, INIT**2)
    tau_w = paper.tau / omega
    t_half_w = tau_w / 2 * np.log((paper.a_inf - INIT**2) / INIT**2)
    out: dict[str, Any] = {
        "omega_diag": omega, "task_mean": task.task_eigs.mean(0),
        "paper": {"a_inf": paper.a_inf, "t_half": paper.t_half, "t_half_omega": t_half_w,
                  "loss_inf": paper.loss_inf,
                  "loss_inf_omega": float(0.5 * (omega * s * (1 - s * paper.a_inf)).sum()),
                  "plateaus": th.plateau_levels(s, N)},
        "exact_omega1": omega1_flow(s, paper),
    }
    t_end = r["flow"].traj.snapshot_time[-1] / (2 * ETA_P)
    for label in ("flow", "sgd"):
        t, m = products(r[label])
        diag = np.einsum("tii->ti", m)
        off = np.abs(m - np.einsum("ti,ij->tij", diag, np.eye(D))).max((1, 2))
        tail = t >= 0.9 * t[-1]
        traj = r[label].traj
        loss_t = traj.time / (2 * ETA_P)
        # SGD: each record's loss is the mean over the updates since the previous one: weight by them
        span = np.diff(traj.step, prepend=0).astype(float) if label == "sgd" else np.ones(loss_t.size)
        loss_tail = (loss_t >= t[-1] - 30) if label == "sgd" else (loss_t >= loss_t[-1])
        blocks = r[label].traj.params.reshape(len(t), 4, D, D)
        out[label] = {"a_final": diag[tail].mean(0), "t_half": th.half_times(t, diag, diag[tail].mean(0)),
                      "max_offdiag_final": float(off[-1]),
                      "final_loss": float(np.average(traj.loss[loss_tail], weights=span[loss_tail])),
                      "conserved_C": [float(blocks[0, 1].ravel() @ blocks[0, 1].ravel()
                                            - blocks[0, 2].ravel() @ blocks[0, 2].ravel()),
                                      float((blocks[-1, 1] ** 2).sum() - (blocks[-1, 2] ** 2).sum())],
                      "epochs": float(t[-1])}
        fits = [logit_fit(t, diag[:, k], out[label]["a_final"][k], 2 * omega[k] / paper.tau[k])
                for k in range(D)]
        out[label]["logistic_residual"] = [res for _, res in fits]
        out[label].update(_stage_order(s, out[label]["t_half"], out[label]["a_final"]))
    if "population" in r["sgd"].traj.test_loss:
        pop = r["sgd"].traj.test_loss["population"]
        out["sgd"]["final_population_loss"] = float(pop[-1])
        # Fig. 3A on data: the SGD iterate's exact loss against Eq. 14 at the task set's ω, on a
        # log-time grid (the stages are geometrically spaced), median and largest relative gap
        t_rec = r["sgd"].traj.time / (2 * ETA_P)
        grid = np.geomspace(0.1, t_rec[-1], 200)
        gap = np.abs(np.interp(grid, t_rec, pop) / paper_at_omega(grid, s, omega)[1] - 1)
        out["sgd"]["eq14_gap"] = {"median": float(np.median(gap)), "max": float(gap.max())}
    learned = out["flow"]["a_final"]
    out["relative_error"] = {
        "sgd_vs_exact_a": out["sgd"]["a_final"] / learned - 1,
        "paper_vs_exact_a": paper.a_inf / learned - 1,
        "sgd_vs_exact_t_half": out["sgd"]["t_half"] / out["flow"]["t_half"] - 1,
        "paper_omega_vs_exact_t_half": t_half_w / out["flow"]["t_half"] - 1,
    }
    out["note"] = ("t_half of modes whose a has not reached half its final value within "
                   f"{t_end:.0f} epochs is NaN; quick runs cover the first modes only")
    return out


def plot_fig1(runs_: list[Run], summary: dict[str, Any]):
    fig, axes = plots.plt.subplots(1, 3, figsize=(12, 3.8))
    _, m = products(_by_label(runs_)["sgd"])
    paper = np.diag(summary["paper"]["a_inf"])
    vmax = max(np.abs(m[-1]).max(), paper.max())
    for ax, mat, title in ((axes[0], m[-1], "SGD: Uᵀ p2 q1 U"), (axes[1], paper, "paper: [s^∞(S)]⁻¹")):
        plots.heatmap(ax, mat, colorbar="a_α", vmin=0, vmax=vmax, xlabel="eigen-direction β of S",
                      ylabel="eigen-direction α of S")
        ax.set_title(title, fontsize=9)
    x = np.arange(D)
    for k, (key, label) in enumerate((("sgd", "SGD"), ("flow", "exact flow (Ω)"))):
        axes[2].bar(x + 0.25 * k, summary[key]["a_final"], 0.25, label=label)
    axes[2].bar(x + 0.5, summary["paper"]["a_inf"], 0.25, label="paper 1/s^∞")
    axes[2].set_xticks(x + 0.25, [f"s={v:g}" for v in c0_task().s])
    axes[2].set(xlabel="mode α (its eigenvalue s of S)", ylabel="a_α = (Uᵀ p2 q1 U)_αα")
    axes[2].legend(fontsize=7)
    return fig


def plot_fig2(runs_: list[Run], summary: dict[str, Any]):
    r = _by_label(runs_)
    fig, (ax, bx) = plots.plt.subplots(1, 2, figsize=(11, 4))
    t_s, m_s = products(r["sgd"])
    t_f, m_f = products(r["flow"])
    task = r["sgd"].spec.task
    tt = np.geomspace(0.05, max(t_f[-1], 1.0), 400)
    a_w, _ = paper_at_omega(tt, task.s, np.diag(task.omega()))
    colors = plots.plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i in range(D):
        c = colors[i]
        ax.plot(t_s[1:], m_s[1:, i, i], "o", ms=2, color=c, label="SGD" if i == 0 else None)
        ax.plot(t_f[1:], m_f[1:, i, i], "-", color=c, label="exact flow" if i == 0 else None)
        ax.plot(tt, a_w[:, i], "--", color=c, lw=1, label="paper Eq. 13 (ω τ)" if i == 0 else None)
    ax.set_xscale("log")
    ax.set_xlabel("epochs")
    ax.set_ylabel("a_α")
    ax.legend(fontsize=7)
    for label, style in (("sgd", "o"), ("flow", "-")):
        blocks = r[label].traj.params.reshape(len(r[label].traj.params), 4, D, D)
        t = r[label].traj.snapshot_time / (2 * ETA_P)
        pn, qn = (blocks[:, 1] ** 2).sum((1, 2)), (blocks[:, 2] ** 2).sum((1, 2))
        kw = {"ms": 2} if style == "o" else {}
        bx.plot(t[1:], pn[1:], style, label=f"‖p̄2‖² {label}", **kw)
        bx.plot(t[1:], qn[1:], style, label=f"‖q̄1‖² {label}", **kw)
        bx.plot(t[1:], (pn - qn)[1:], style, label=f"C {label}", **kw)
    bx.set(xscale="log", xlabel="epochs", ylabel="squared norm, and C = ‖p̄2‖² − ‖q̄1‖²")
    bx.legend(fontsize=7)
    return fig


def plot_fig3(runs_: list[Run], summary: dict[str, Any]):
    """Like with like: the exact flow on the task set's Ω against the paper's Eq. 14 at that Ω
    (ω-corrected τ and ω-weighted modes), and the exact flow at ω = 1 against Eq. 14 as printed."""
    r = _by_label(runs_)
    fig, ax = plots.plt.subplots(1, 1, figsize=(7, 4.5))
    sgd, flow, task = r["sgd"].traj, r["flow"].traj, r["sgd"].spec.task
    ax.plot(sgd.time[1:] / (2 * ETA_P), sgd.loss[1:], "o", ms=2, color="0.6",
            label="SGD training loss (mean since the previous record)")
    if "population" in sgd.test_loss:
        ax.plot(sgd.time[1:] / (2 * ETA_P), sgd.test_loss["population"][1:], ".", ms=2, color="0.3",
                label="SGD iterate, exact population loss")
    tt = np.geomspace(0.05, max(flow.time[-1] / (2 * ETA_P), 1.0), 400)
    ax.plot(flow.time[1:] / (2 * ETA_P), flow.loss[1:], "-", color="tab:blue",
            label="exact flow, task set's Ω")
    ax.plot(tt, paper_at_omega(tt, task.s, np.diag(task.omega()))[1], "--", color="tab:blue",
            label="paper Eq. 14 at the task set's ω")
    p0 = np.full(D, INIT)
    ax.plot(tt, aligned_flow.exact_flow(task.s, N, ETA_P, p0, p0, tt).loss, "-", color="tab:orange",
            label="exact flow, ω = 1")
    ax.plot(tt, th.paper_theory(task.s, N, ETA_P, INIT**2).loss(tt), "--", color="tab:orange",
            label="paper Eq. 14 (ω = 1)")
    plots.draw_levels(ax, summary["paper"]["plateaus"], label="paper plateaus (ω = 1)")
    # the loss is flat at L(0) until the first mode learns: start a decade before its half-time
    # (from the first record, five flat decades took half the panel)
    first = np.asarray(summary["flow"]["t_half"], dtype=float)
    ax.set(xscale="log", xlabel="epochs", ylabel="loss ½‖ŷ − y‖²",
           xlim=(0.1 * np.nanmin(first), None))
    plots.short_log_ticks(ax.xaxis)
    ax.legend(fontsize=7)
    return fig


FIG1 = Recipe("The learned fixed point: Uᵀp2q1U after task-centric SGD (left) beside the paper's "
              "[s^∞(S)]⁻¹ (middle; diagonal in the eigenbasis U); right, its diagonal a_α per "
              "eigenvalue s_α for SGD, the exact flow and the paper's 1/s^∞. " + SETTING,
              runs, summarize, plot_fig1)
FIG2 = Recipe("Stage-like learning: a_α(t) of each mode for SGD (dots) and the exact flow (lines) "
              "against the paper's Eq. 13 with the task set's ω (dashed); right, ‖p̄2‖², ‖q̄1‖² and "
              "their difference C, conserved by the flow. " + SETTING, runs, summarize, plot_fig2)
FIG3 = Recipe("The loss through the stages: SGD's training loss and its iterate's exact population "
              "loss, the exact flow on the task set's Ω and at ω = 1, each beside the paper's Eq. 14 "
              "at the same ω; grey dashed lines, the paper's plateau levels (ω = 1). " + SETTING,
              runs, summarize, plot_fig3)
