"""Fig. 4 of Mainali & Teixeira 2025: timescale separation seen by the macroscopic measures on the
linear model (C0): (A) curvature of the windowed loss autocorrelation, (B) curvature of ‖p̄2‖_F,
(C) marginalised effective rank of Uᵀ p2 q1 U (Variant A, magnitude; Variant B, mode identity).

The measures are computed on the exact aligned flow of C0's task set (its ω) on a uniform grid of
epochs, and on the paper's closed form; every landmark is matched to the mode whose window
[t_half − 1.2 τ_α, t_half + 0.7 τ_α] (spec §9.5) contains it. The run is the reduced model's exact
flow, whose loss the aligned flow must reproduce (the off-diagonal Ω leaves it 1e-3-close).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import plots
from fastattn.analysis import spectral as sp
from fastattn.experiments.mainali2025.c0 import ETA_P, INIT, D, N, c0_task
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.models import LinearTransformerConfig
from fastattn.population import aligned_flow
from fastattn.theory import mainali2025 as th
from fastattn.training import TrainConfig


def runs(quick: bool) -> list[RunSpec]:
    epochs = 30 if quick else 250
    cfg = TrainConfig(method="flow", t_end=2 * ETA_P * epochs, integrator="rk45", rtol=1e-10,
                      atol=1e-14, n_records=200, n_snapshots=5)
    return [RunSpec("flow", c0_task(), LinearTransformerConfig(D, init_scale=INIT, reduced=True), cfg)]


def _measures(t: np.ndarray, a: np.ndarray, loss: np.ndarray) -> dict[str, Any]:
    norm = np.sqrt(np.clip(a, 0, None).sum(1))                   # ‖p̄2‖_F with p = q = √a (balanced)
    dt = t[1] - t[0]
    norm_curv = np.gradient(np.gradient(norm, dt), dt)
    acf = sp.windowed_autocorrelation(loss, lag=1, window=5)
    acf_curv = np.gradient(np.gradient(acf, dt), dt)
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


def summarize(runs_: list[Run]) -> dict[str, Any]:
    run = runs_[0]
    task = run.spec.task
    omega = np.diag(task.omega())
    epochs = run.traj.time[-1] / (2 * ETA_P)
    t = np.linspace(0, epochs, int(epochs * 40) + 1)
    p0 = np.full(D, INIT)
    flow = aligned_flow.exact_flow(task.s, N, ETA_P, p0, p0, t, omega=omega)
    paper = th.paper_theory(task.s, N, ETA_P, INIT**2)
    tau = paper.tau / omega
    exact = _measures(t, flow.a, flow.loss)
    closed = _measures(t, paper.a(t), paper.loss(t))
    a_limit = aligned_flow.exact_flow(task.s, N, ETA_P, p0, p0, np.array([0.0, 5000.0]), omega=omega).a[-1]
    t_half = th.half_times(t, flow.a, a_limit)
    reduced_loss = np.interp(run.traj.time[-1] / (2 * ETA_P), t, flow.loss)
    out: dict[str, Any] = {"t_half_exact": t_half, "tau_omega": tau, "t_half_paper": paper.t_half,
                           "aligned_vs_reduced_final_loss": [float(reduced_loss),
                                                             float(run.traj.final_loss)]}
    for name, m in (("exact", exact), ("paper_closed_form", closed)):
        ref = t_half if name == "exact" else paper.t_half
        ref_tau = tau if name == "exact" else paper.tau
        out[name] = {k: v for k, v in m.items() if k != "series"}
        out[name]["norm_peak_modes"] = _match(m["norm_curvature_peaks"], ref, ref_tau)
        out[name]["autocorrelation_peak_modes"] = _match(m["autocorrelation_curvature_peaks"], ref, ref_tau)
        out[name]["mer_magnitude_first_dips"] = [float(d[0]) if len(d) else None
                                                 for d in m["mer_magnitude_dips"]]
    keep = np.unique(np.geomspace(1, t.size - 1, 400).astype(int))     # the plotted series, log-spaced
    out["_series"] = {k: v[keep] for k, v in {"t": t, "a": flow.a, "loss": flow.loss,
                                               **exact["series"]}.items()}
    return out


def plot(runs_: list[Run], summary: dict[str, Any]):
    s = summary["_series"]
    t = s["t"]
    fig, axes = plots.plt.subplots(1, 3, figsize=(14, 4))
    axes[0].plot(t, s["autocorrelation_curvature"])
    axes[0].set_title("(A) d²/dt² windowed loss autocorrelation", fontsize=9)
    axes[1].plot(t, s["norm_curvature"])
    axes[1].set_title("(B) d²‖p̄2‖_F/dt²", fontsize=9)
    for k in range(s["mer_magnitude"].shape[1]):
        axes[2].plot(t, s["mer_magnitude"][:, k], label=f"magnitude, k={k}")
        axes[2].plot(t, s["mer_mode"][:, k], "--", label=f"mode identity, k={k}")
    axes[2].set_title("(C) marginalised effective rank of diag a", fontsize=9)
    axes[2].legend(fontsize=6)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("epochs")
        for th_ in summary["t_half_exact"]:
            if np.isfinite(th_):
                ax.axvline(th_, color="grey", lw=0.6, ls=":")
    return fig


RECIPE = Recipe("C0 (spec §9.0), exact aligned flow with the task set's ω on a uniform grid of 40 "
                "points per epoch; dotted lines: exact half-times. Measures of spec §8.", runs,
                summarize, plot)
