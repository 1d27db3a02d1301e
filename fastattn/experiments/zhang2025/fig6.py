"""Fig. 6: initialisation scale, (a) merged KQ (ATTN_M, H=8) and (b) separate KQ R = 1 (ATTN_S, H=4):
larger inits shorten the plateaus (Eqs. 54, 72); the largest inits are lazy (exponential-shaped decay,
no saddle visited)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import analysis, plots
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.zhang2025._common import MIN_DECADES, loss_panel, nearest_m
from fastattn.experiments.zhang2025.settings import GRAD_TOL, eq19_levels, rk45, run
from fastattn.theory import zhang2025 as theory

PANELS = {"attn_m": "(a) ATTN_M, merged KQ, H=8", "attn_s": "(b) ATTN_S, separate KQ R=1, H=4"}


def horizon(panel: str, w_init: float) -> float:
    """Flow horizon; the first record is at 1e-6 of it, so a horizon shrinking with the init (whose
    plateaus shrink as 1/w_init, Eq. 72) shows every run from t ≤ 3 on (runs stop at L* anyway)."""
    return 1e3 if panel == "attn_m" else min(1e7, max(1e3, 3e3 / w_init))


def runs(quick: bool) -> list[RunSpec]:
    scales = {"attn_m": (1e-2, 3.0) if quick else (1e-3, 1e-2, 1e-1, 1.0, 3.0),
              "attn_s": (1e-2, 1e-1, 10.0) if quick else (1e-3, 1e-2, 1e-1, 1.0, 10.0)}
    heads = {"attn_m": 8, "attn_s": 4}
    out = []
    for panel, ws in scales.items():
        for w in ws:
            out.append(run(f"{panel}_init{w:g}", "merged" if panel == "attn_m" else "separate",
                           {"panel": panel, "init_scale": w},
                           model={"heads": heads[panel], "init_scale": w},
                           # plateau gradients scale as w²: GRAD_TOL stops init 1e-3's
                           # ATTN_S on its m = 2 plateau (L = 0.3774)
                           train=rk45(horizon(panel, w), GRAD_TOL * min(1.0, (w / 1e-2) ** 2),
                                      n_records=800)))
    return out


def progress_times(run: Run) -> tuple[float, float]:
    """Times at which the loss has made 10% and 90% of its way from L(0) to L*: a sigmoid drop
    after a plateau has t90/t10 near 1, an exponential decay (lazy) about ln 10/ln(10/9) ≈ 22."""
    loss, t = run.traj.loss, run.traj.time
    l_star = float(eq19_levels(run.spec.task)[-1])
    done = (loss[0] - loss) / (loss[0] - l_star)
    return tuple(float(t[np.argmax(done >= f)]) for f in (0.1, 0.9))


def saddles_visited(run: Run) -> list[int]:
    """The m (0 < m < D) of the Eq. 19 saddles the run lingers at (a plateau ≥ MIN_DECADES long
    within 5% of L(M_m)); the merged model has no such saddle, so this is for ATTN_S."""
    levels = eq19_levels(run.spec.task)
    plateaus, _ = analysis.find_plateaus_and_drops(run.traj.time, run.traj.loss)
    out = []
    for p in analysis.conspicuous_plateaus(plateaus, MIN_DECADES):
        m = nearest_m(p.level, levels)
        if 0 < m < len(levels) - 1 and abs(p.level - levels[m]) < 0.05 * levels[m]:
            out.append(m)
    return sorted(set(out))


def plateau_theory(run: Run) -> float | None:
    """The predicted first plateau: Eq. 54 (merged, s(0) = ‖v(0)‖²) or Eq. 72 (separate, v(0) of the
    head that learns e_1: the one aligned with e_1 at the end)."""
    task, cfg = run.spec.task, run.spec.model
    v0 = np.abs(analysis.value_weights(run.traj.params[0], cfg.heads))
    if run.spec.group["panel"] == "attn_m":
        s0 = float(np.sum(v0**2))
        return theory.merged_plateau_time(task.eigvals, s0) if s0 < 1 else None   # Eq. 54: s(0) ≪ 1
    vf = np.abs(analysis.value_weights(run.traj.params[-1], cfg.heads))
    _, k, _ = analysis.split_separate(run.traj.params[-1], cfg.heads, 1, cfg.dim)
    aligned = np.flatnonzero(analysis.best_aligned(k[:, 0], task.eigvecs) == 0)
    first = int(aligned[np.argmax(vf[aligned])]) if aligned.size else int(np.argmax(vf))
    return theory.plateau_duration(float(task.eigvals[0]), v0[first])


def summarize(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {panel: {} for panel in PANELS}
    for r in runs:
        _, drops = analysis.find_plateaus_and_drops(r.traj.time, r.traj.loss)
        t10, t90 = progress_times(r)
        l_star = float(eq19_levels(r.spec.task)[-1])
        out[r.spec.group["panel"]][r.spec.label] = {
            "init_scale": r.spec.group["init_scale"], "initial_loss": float(r.traj.loss[0]),
            "first_record_time": float(r.traj.time[1]), "first_drop_time": drops[0].time if drops else None,
            "plateau_theory": plateau_theory(r), "t10": t10, "t90": t90, "t90_over_t10": t90 / t10,
            "saddles_visited": saddles_visited(r), "final_loss": float(r.traj.loss[-1]), "L_star": l_star,
            "status": r.traj.status}
    out["theory"] = {"attn_m": "Eq. 54 with s(0) = ‖v(0)‖²", "attn_s": "Eq. 72 with |v(0)| of the e_1 head"}
    # Eq. 72: ATTN_S's first plateau lasts ∝ 1/|v(0)|, so a ten times smaller init waits ten times
    # longer (both inits are run at both settings)
    s = out["attn_s"]
    small, large = s["attn_s_init0.01"]["first_drop_time"], s["attn_s_init0.1"]["first_drop_time"]
    out["attn_s_first_drop_ratio_init0.01_vs_0.1"] = (small / large if small and large else None)
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    fig, axes = plots.plt.subplots(1, 2, figsize=(13, 4.8))
    for ax, (panel, title) in zip(axes, PANELS.items(), strict=True):
        these = [r for r in runs if r.spec.group["panel"] == panel]
        levels = eq19_levels(these[0].spec.task)
        if panel == "attn_m":   # one drop, from L(M_0) to L* (Eq. 11)
            loss_panel(ax, these, levels[[0, -1]], label_key="init_scale", levels_label="L(0), L* (Eq. 11)")
        else:
            loss_panel(ax, these, levels, label_key="init_scale")
        ax.set_yscale("log")
        high = [r for r in these if r.traj.loss[0] > 1.5]
        if high:   # a lazy init starting far above L(M_0) would squash the plateaus
            ax.set_ylim(0.8 * levels[-1], 1.5)
            ax.text(0.02, 0.02, "; ".join(f"init {r.spec.group['init_scale']:g} starts at L = "
                                          f"{r.traj.loss[0]:.3g}" for r in high),
                    transform=ax.transAxes, fontsize=7)
        for i, r in enumerate(these):
            t_theory = summary[panel][r.spec.label]["plateau_theory"]
            if t_theory is not None and t_theory > 0:
                ax.axvline(t_theory, color=f"C{i}", ls=":", lw=0.8)
        ax.set_title(f"{title}\ndotted: {summary['theory'][panel]}", fontsize=9)
    return fig


RECIPE = Recipe(
    "Exact flow (RK45), D=4, N=31, λ=(.4,.3,.2,.1), App. C.2 init with w_init from 1e-3 up to the lazy "
    "regime (3 merged, 10 separate); log time from 1e-6 of each run's horizon. Larger init: shorter "
    "plateaus; largest: exponential-shaped decay with no saddle.",
    runs, summarize, plot)
