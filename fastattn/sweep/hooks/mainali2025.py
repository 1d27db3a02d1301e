"""Mainali & Teixeira 2025's theory in a sweep (wishart_tasks × linear_transformer, exact flows):
per mode α (in the order of the task's spectrum s, descending), the half-time t_half_α and the
final a_α = (Uᵀ p2 q1 U)_αα measured on the run, beside the paper's closed form (Eqs. 11–14, ω = 1,
a⁰ = init², the aligned init) and the exact optimum a*_α (spec §6.4, ω = 1); the null blocks'
norms ‖p1‖, ‖q2‖ at the end.

Time: epochs at ηP = 1, t = τ/2 (τ the integrators' time; at another ηP divide by it). The
measured half-times are interpolated between parameter snapshots (`--n-snapshots`, log-spaced:
use a few hundred for a percent-level t_half).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from fastattn.sweep.hooks.base import Columns, Hooks
from fastattn.sweep.horizon import Horizon
from fastattn.theory import mainali2025 as th
from fastattn.training import Trajectory

EPOCHS = "epochs at ηP = 1 (= ½ × the integrators' time)"
#: columns per mode are numbered 1..MAX_MODES; larger d keeps the first MAX_MODES modes
MAX_MODES = 16


def _modes(d: int) -> range:
    return range(1, min(d, MAX_MODES) + 1)


def predictions(task, model: Mapping[str, Any], params0, horizon: Horizon) -> Columns:
    """Paper: a^∞_α, t_half_α (a⁰ = init², aligned init), L^∞ (A114); exact (ω = 1): a*_α, L*."""
    s = np.asarray(task.s, dtype=float)
    n = float(task.context)
    a0 = float(model.get("init_scale", 1e-2)) ** 2
    out: Columns = {"theory_Lstar": float("nan"), "theory_loss_inf_paper": float("nan"),
                    "theory_tau_max": float(1 / s.min() ** 2)}
    aligned = model.get("init_mode") in (None, "aligned") and a0 > 0
    paper = th.paper_theory(s, n, 1.0, a0) if aligned else None
    a_star, l_star = th.exact_optimum(s, n)
    out["theory_Lstar"] = l_star
    if paper is not None:
        out["theory_loss_inf_paper"] = paper.loss_inf
    for k in _modes(s.size):
        out[f"theory_a_exact_{k}"] = float(a_star[k - 1])
        out[f"theory_a_paper_{k}"] = float(paper.a_inf[k - 1]) if paper else float("nan")
        out[f"theory_t_half_{k}"] = float(paper.t_half[k - 1]) if paper else float("nan")
    return out


def flow_horizon(theory: Columns, horizon: Horizon) -> tuple[float | None, float | None]:
    """t_end = horizon_factor × the slowest paper time constant τ_max = 1/s_min² (epochs at ηP =
    1; ≈ 10× the slowest paper half-time at a⁰ = 1e-4 and the default factor); no target (the
    half-times need the final values)."""
    return float(f"{horizon.horizon_factor * theory['theory_tau_max'] * 2:.6g}"), None


def measurements(traj: Trajectory, theory: Columns, measured: Columns) -> Columns:
    """Per mode: final a_α, its half-time (first time a_α reaches half its final value, epochs),
    relative errors against the exact and paper values; ‖p1‖_F, ‖q2‖_F at the end."""
    task = measured["_task"]
    d = task.dim
    out: Columns = {}
    params = np.asarray(traj.params, dtype=float)
    if params.ndim != 2 or params.shape[1] != 4 * d * d or len(params) < 2:
        return out
    u = task.U
    blocks = params.reshape(len(params), 4, d, d)
    a = np.einsum("ji,tjk,tkl,li->ti", u, blocks[:, 1], blocks[:, 2], u)
    t = np.asarray(traj.snapshot_time, dtype=float) / 2
    t_half = th.half_times(t, a)
    for k in _modes(d):
        out[f"a_final_{k}"] = float(a[-1, k - 1])
        out[f"t_half_{k}"] = float(t_half[k - 1])
        exact = theory.get(f"theory_a_exact_{k}", float("nan"))
        out[f"a_rel_error_exact_{k}"] = a[-1, k - 1] / exact - 1 if exact else float("nan")
        paper = theory.get(f"theory_t_half_{k}", float("nan"))
        out[f"t_half_rel_error_paper_{k}"] = (t_half[k - 1] / paper - 1 if math.isfinite(paper)
                                              else float("nan"))
    out["norm_p1"] = float(np.linalg.norm(blocks[-1, 0]))
    out["norm_q2"] = float(np.linalg.norm(blocks[-1, 3]))
    return out


HOOKS = Hooks(
    "mainali2025", frozenset({("wishart_tasks", "linear_transformer")}),
    predictions, flow_horizon, measurements,
    plots={"half_times": f"{__package__}.mainali2025_plots:plot_half_times"},
    units={**{f"{p}t_half_{k}": EPOCHS for p in ("", "theory_") for k in range(1, MAX_MODES + 1)},
           "theory_tau_max": EPOCHS})
