"""Fig. 4 of Mainali & Teixeira 2025: timescale separation seen by the macroscopic measures on the
linear model (C0): (A) curvature of the windowed loss autocorrelation, (B) curvature of ‖p̄2‖_F,
(C) marginalised effective rank of Uᵀ p2 q1 U (Variant A, magnitude; Variant B, mode identity).

The measures are computed on the exact aligned flow of C0's task set (its ω) on a uniform grid of
epochs, on the paper's closed form at the same ω (Eqs. 13–14 with τ_α/ω_α, `c0.paper_at_omega`),
and on the simulation (task-centric SGD, C0's run, its records every 1/16 epoch smoothed by a
Gaussian of width max(0.1 t, ¼ epoch)); every landmark is
matched to the mode whose window [t_half − 1.2 τ_α, t_half + 0.7 τ_α] (spec §9.5) contains it. The
flow run is the reduced model's exact flow, whose loss the aligned flow must reproduce (the
off-diagonal Ω leaves it 1e-3-close). The panels' time axis is logarithmic: the stages are
geometrically spaced (t_half ≈ 2, 7, 23, 157 epochs).

For the claims, the summary also holds the landmarks of the closed form as printed (ω = 1) beside
those of the exact population flow at ω = 1 (`exact_omega1`: the closed form checked by
integration), and, per measure, the fraction of the stages the SGD run learns that have a landmark
in their window (`simulation.fraction_of_learned_modes_marked`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.ticker import SymmetricalLogLocator

from fastattn import plots
from fastattn.analysis import spectral as sp
from fastattn.experiments.mainali2025.c0 import (
    ETA_P,
    FLOW,
    INIT,
    PAIR,
    D,
    N,
    P,
    paper_at_omega,
    products,
)
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.population import aligned_flow
from fastattn.theory import mainali2025 as th


def runs(quick: bool) -> list[RunSpec]:
    """The exact flow and task-centric SGD over C0's 250 epochs (quick: 30), SGD's snapshots 16 a
    epoch."""
    epochs = 30 if quick else 250
    flow = FLOW | {"n_records": 200, "n_snapshots": 5} | ({"t_end": 2 * ETA_P * epochs} if quick
                                                          else {})
    sgd = {"n_records": 16 * epochs, "n_snapshots": 16 * epochs} | ({"steps": P * epochs} if quick
                                                                     else {})
    return [preset_run("flow", *PAIR, train=flow), preset_run("sgd", *PAIR, train=sgd)]


def _measures(t: np.ndarray, a: np.ndarray, loss: np.ndarray) -> dict[str, Any]:
    norm = np.sqrt(np.clip(a, 0, None).sum(1))                   # ‖p̄2‖_F with p = q = √a (balanced)
    norm_curv = np.gradient(np.gradient(norm, t), t)             # t: a uniform or log-spaced grid
    acf = sp.windowed_autocorrelation(loss, lag=1, window=5)
    acf_curv = np.gradient(np.gradient(acf, t), t)
    mer_a = sp.marginalized_effective_rank(a, D - 2)
    mer_b, order = sp.marginalized_effective_rank_by_mode(a, D - 2, t)
    inner = slice(4, -4)                       # one-sided differences at the grid's ends: no landmarks

    def marks(y, kind, prominence):
        return sp.landmarks(t[inner], y[inner], kind, prominence)

    return {"norm_curvature_peaks": marks(norm_curv, "peak", 1e-4),
            "autocorrelation_curvature_peaks": marks(acf_curv, "peak", 1e-5),
            "mer_magnitude_dips": [marks(mer_a[:, k], "dip", 1e-3) for k in range(D - 1)],
            "mer_mode_dips": [marks(mer_b[:, k], "dip", 1e-3) for k in range(D - 1)],
            "mode_order": order,
            "series": {"norm_curvature": norm_curv, "autocorrelation_curvature": acf_curv,
                       "mer_magnitude": mer_a, "mer_mode": mer_b}}


def _match(times, t_half, tau) -> list[int | None]:
    """The mode whose window [t_half − 1.2τ, t_half + 0.7τ] holds each landmark (None: none)."""
    out = []
    for x in np.atleast_1d(times):
        hit = [i for i in range(len(t_half)) if t_half[i] - 1.2 * tau[i] <= x <= t_half[i] + 0.7 * tau[i]]
        out.append(hit[0] if hit else None)
    return out


def _simulation(run: Run, width: float = 0.1, floor: float = 0.25
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(epochs `[G]` log-spaced, a `[G, d]`, loss `[G]`) of an SGD run: the diagonal of Uᵀ p2 q1 U
    (interpolated from the snapshots onto the records' times) and the records' training loss, each
    Gaussian-weighted over the records around 400 log-spaced t from ½ epoch, with standard deviation
    max(width·t, floor) epochs. Second derivatives of the raw SGD series are batch noise (a peak
    every few records); the stages widen with t (τ_α ∝ 1/s_α²), so the kernel does too."""
    t = run.traj.time / (2 * ETA_P)
    ts, m = products(run)
    raw = np.column_stack([*(np.interp(t, ts, m[:, k, k]) for k in range(D)), run.traj.loss])
    grid = np.geomspace(0.5, t[-1] / (1 + 2 * width), 400)
    sd = np.maximum(width * grid, floor)
    w = np.exp(-0.5 * ((t[None, :] - grid[:, None]) / sd[:, None]) ** 2)       # [G, R]
    smooth = (w @ raw) / w.sum(1, keepdims=True)
    return grid, smooth[:, :D], smooth[:, D]


def _omega1(s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a `[T, d]`, loss `[T]`) of the exact aligned flow at ω = 1 from C0's init on epochs t."""
    p0 = np.full(D, INIT)
    flow = aligned_flow.exact_flow(s, N, ETA_P, p0, p0, t)
    return flow.a, flow.loss


def summarize(runs_: list[Run]) -> dict[str, Any]:
    run = next(r for r in runs_ if r.spec.label == "flow")
    task = run.spec.task
    omega = np.diag(task.omega())
    epochs = run.traj.time[-1] / (2 * ETA_P)
    t = np.linspace(0, epochs, int(epochs * 40) + 1)
    p0 = np.full(D, INIT)
    flow = aligned_flow.exact_flow(task.s, N, ETA_P, p0, p0, t, omega=omega)
    paper = th.paper_theory(task.s, N, ETA_P, INIT**2)
    tau = paper.tau / omega
    exact = _measures(t, flow.a, flow.loss)
    closed = _measures(t, *paper_at_omega(t, task.s, omega))
    t_sim, a_sim, loss_sim = _simulation(next(r for r in runs_ if r.spec.label == "sgd"))
    sim = _measures(t_sim, a_sim, loss_sim)
    a_limit = aligned_flow.exact_flow(task.s, N, ETA_P, p0, p0, np.array([0.0, 5000.0]), omega=omega).a[-1]
    t_half = th.half_times(t, flow.a, a_limit)
    reduced_loss = np.interp(run.traj.time[-1] / (2 * ETA_P), t, flow.loss)
    out: dict[str, Any] = {"t_half_exact": t_half, "tau_omega": tau, "t_half_paper": paper.t_half,
                           "aligned_vs_reduced_final_loss": [float(reduced_loss),
                                                             float(run.traj.final_loss)]}
    t_half_omega = tau / 2 * np.log((paper.a_inf - INIT**2) / INIT**2)
    out["t_half_paper_omega"] = t_half_omega
    for name, m in (("exact", exact), ("paper_closed_form", closed), ("simulation", sim)):
        ref = t_half_omega if name == "paper_closed_form" else t_half
        out[name] = {k: v for k, v in m.items() if k != "series"}
        out[name]["norm_peak_modes"] = _match(m["norm_curvature_peaks"], ref, tau)
        out[name]["autocorrelation_peak_modes"] = _match(m["autocorrelation_curvature_peaks"], ref, tau)
        out[name]["mer_magnitude_first_dips"] = [float(d[0]) if len(d) else None
                                                 for d in m["mer_magnitude_dips"]]
    # Stage by stage, the SGD landmarks' modes: of the modes the run learns (an exact half time
    # inside the run), how many have a landmark of each measure in their window
    learned = [k for k in range(D) if np.isfinite(t_half[k])]
    matched = {"norm_curvature_peaks": set(out["simulation"]["norm_peak_modes"]),
               "autocorrelation_curvature_peaks": set(out["simulation"]["autocorrelation_peak_modes"]),
               "mer_magnitude_first_dips": {k for k, m in enumerate(_match(
                   [np.nan if d is None else d for d in out["simulation"]["mer_magnitude_first_dips"]],
                   t_half, tau)) if m == k}}
    out["simulation"]["modes_learned"] = len(learned)
    # the marginalised rank has d − 1 curves (k = 0 .. d − 2): it can mark the first d − 1 modes
    can_mark = {name: [k for k in learned if name != "mer_magnitude_first_dips" or k < D - 1]
                for name in matched}
    out["simulation"]["fraction_of_learned_modes_marked"] = {
        name: len(hit & set(can_mark[name])) / len(can_mark[name]) for name, hit in matched.items()}
    # the closed form as printed (ω = 1) beside the exact population flow at ω = 1 (the paper's task
    # distribution), the same measures on each: the closed-form landmarks checked by integration
    for name, (a_, loss_) in (("paper_closed_form_omega1", paper_at_omega(t, task.s, np.ones(D))),
                              ("exact_omega1", _omega1(task.s, t))):
        m = _measures(t, a_, loss_)
        out[name] = {"norm_curvature_peaks": m["norm_curvature_peaks"],
                     "mer_magnitude_first_dips": [float(d[0]) if len(d) else None
                                                  for d in m["mer_magnitude_dips"]]}
    keep = np.unique(np.geomspace(1, t.size - 1, 400).astype(int))     # the plotted series, log-spaced
    out["_series"] = {name: {k: v[keep] for k, v in {"t": t, **m["series"]}.items()}
                      for name, m in (("exact", exact), ("paper_closed_form", closed))}
    out["_series"]["simulation"] = {"t": t_sim, **sim["series"]}
    return out


def plot(runs_: list[Run], summary: dict[str, Any]):
    fig, axes = plots.plt.subplots(1, 3, figsize=(15, 4.2))
    styles = {"exact": ("-", "exact flow (Ω)"), "paper_closed_form": ("--", "paper Eqs. 13–14 (ω τ)"),
              "simulation": (":", "SGD simulation")}
    for name, (ls, label) in styles.items():
        s = summary["_series"][name]
        t, inner = s["t"], slice(4, -4)
        axes[0].plot(t[inner], s["autocorrelation_curvature"][inner], ls, label=label)
        axes[1].plot(t[inner], s["norm_curvature"][inner], ls, label=label)
        for k in range(s["mer_magnitude"].shape[1]):
            axes[2].plot(t, s["mer_magnitude"][:, k], ls, color=f"C{k}",
                         label=f"{label}, k={k}" if name == "exact" or k == 0 else None)
    axes[0].set_title("(A) d²/dt² windowed loss autocorrelation", fontsize=9)
    axes[1].set_title("(B) d²‖p̄2‖_F/dt²", fontsize=9)
    axes[2].set_title("(C) marginalised effective rank of diag a (magnitude)", fontsize=9)
    axes[2].set_ylabel("effective rank")
    for ax in axes[:2]:
        # a decade per tick crowds the symlog axis' labels (±10⁻⁴ … ±10²): one every two decades
        ax.set_yscale("symlog", linthresh=1e-4)
        ax.yaxis.set_major_locator(SymmetricalLogLocator(base=100, linthresh=1e-4))
        ax.set_ylabel("curvature (symlog: linear in ±10⁻⁴)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("epochs")
        ax.legend(fontsize=7)
        for th_ in summary["t_half_exact"]:
            if np.isfinite(th_):
                ax.axvline(th_, color="grey", lw=0.6, ls=":")
    return fig


RECIPE = Recipe("C0 (spec §9.0): exact aligned flow with the task set's ω (40 points per epoch), the "
                "paper's closed form at that ω, and task-centric SGD (records every 1/16 epoch); log time "
                "axis; grey dotted lines: exact half-times. Measures of spec §8.", runs,
                summarize, plot)
