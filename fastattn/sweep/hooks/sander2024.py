"""Sander et al. 2024's theory in a sweep (autoregressive task): the DIAG model's final loss
against the zero-loss minima (Prop. 3: unitary contexts, H ≥ d; Lemma 3 / Prop. 6: orthogonal
contexts, H ≥ d/2) and the augmented model's against Prop. 2's ℓ*; on the DIAG model's final state
the numerical rank of C = BᵀA (`c_rank`), the positional weights p_T and p_{T−1} of the longest
context, and the relative distance of C to the Prop. 6 family member with those (p_T, p_{T−1})
(p_{T−1} = 0 is Prop. 3's C = I/p_T).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from fastattn.sweep.hooks.base import Columns, Hooks
from fastattn.sweep.horizon import Horizon
from fastattn.theory import sander2024 as th
from fastattn.training import Trajectory

#: C's singular values above this fraction of the largest count towards c_rank
RANK_TOL = 1e-6
#: a zero-minimum run stops at L ≤ converge_rel × ZERO_TARGET × L(0) (L(0) = d (T_max − 1))
ZERO_TARGET = 1e-4


def predictions(task, model: Mapping[str, Any], params0, horizon: Horizon) -> Columns:
    """theory_Lstar: 0 (Prop. 3 / Lemma 3) where the heads suffice, Prop. 2's ℓ* for the augmented
    model, NaN where no closed form is known; theory_L0 = d (T_max − 1), the loss at zero."""
    d, tmax, heads = int(task.dim), int(task.context), int(model.get("heads", 1))
    out: Columns = {"theory_L0": float(d * (tmax - 1)), "theory_Lstar": float("nan"),
                    "theory_eta_star": float("nan")}
    if model["kind"] == "diag":
        enough = heads >= d if task.context_dist == "unitary" else \
            heads >= d / 2 if task.context_dist == "orthogonal" else False
        if enough:
            out["theory_Lstar"] = 0.0
    elif model["kind"] == "aug" and task.context_dist == "unitary":
        s0 = "backward" if task.s0 == "backward" else "zero"
        out["theory_eta_star"], out["theory_Lstar"] = th.augmented_optimum(d, tmax, s0)
    return out


def flow_horizon(theory: Columns, horizon: Horizon, init: float | None = None
                 ) -> tuple[float | None, float | None]:
    """t_end = horizon_factor × T_max-free escape estimate 1/init (three factors A, B, P grow
    from the init scale; a heuristic, docs/sweeps.md); target (1 + converge_rel)·ℓ*, or
    converge_rel·ZERO_TARGET·L(0) where ℓ* = 0."""
    lstar = theory["theory_Lstar"]
    if not math.isfinite(lstar):
        target = None
    elif lstar == 0:
        target = horizon.converge_rel * ZERO_TARGET * theory["theory_L0"]
    else:
        target = (1 + horizon.converge_rel) * lstar
    scale = theory.get("theory_init_scale", float("nan"))
    t_end = horizon.horizon_factor / scale if scale and math.isfinite(scale) else None
    return (float(f"{t_end:.6g}") if t_end else None), target


def _predictions(task, model, params0, horizon) -> Columns:
    return predictions(task, model, params0, horizon) | \
        {"theory_init_scale": float(model.get("init_scale", 1e-2))}


def measurements(traj: Trajectory, theory: Columns, measured: Columns) -> Columns:
    """DIAG: c_rank, p_T, p_{T−1}, the Prop. 6 distance ‖C − C₆(p_T, p_{T−1})‖_F / ‖C₆‖_F; AUG:
    eta_aug = a3 b1 (Prop. 2's η* at the optimum); both: the final loss minus ℓ*."""
    task = measured["_task"]
    lstar = theory.get("theory_Lstar", float("nan"))
    out: Columns = {"excess_loss": measured["final_loss"] - lstar if math.isfinite(lstar)
                    else float("nan"),
                    "c_rank": None, "p_T": float("nan"), "p_T_minus_1": float("nan"),
                    "prop6_distance": float("nan")}
    cfg = traj.config.get("model", {})
    if cfg.get("kind") == "aug" and len(traj.params):
        a, b = traj.params[-1][:4], traj.params[-1][4:6]
        out["eta_aug"] = float(a[2] * b[0])          # Prop. 2: a3 b1 → η*
    if cfg.get("kind") != "diag" or not len(traj.params):
        return out
    d, tmax, heads = int(task.dim), int(task.context), int(cfg["heads"])
    theta = np.asarray(traj.params[-1], dtype=float)
    A = theta[:heads * d].reshape(heads, d)
    B = theta[heads * d:2 * heads * d].reshape(heads, d)
    P = theta[2 * heads * d:].reshape(tmax, tmax)
    C = B.T @ A
    sv = np.linalg.svd(C, compute_uv=False)
    out["c_rank"] = int((sv > RANK_TOL * sv[0]).sum()) if sv[0] > 0 else 0
    p_last, p_before = float(P[tmax - 2, tmax - 1]), float(P[tmax - 2, tmax - 2])
    out["p_T"], out["p_T_minus_1"] = p_last, p_before
    try:
        ref = th.prop6_parameters(d, tmax, p_last, p_before)[0] if d % 2 == 0 else np.eye(d) / p_last
        out["prop6_distance"] = float(np.linalg.norm(C - ref) / np.linalg.norm(ref))
    except ValueError:                       # p_T = 0: no family member
        pass
    return out


HOOKS = Hooks(
    "sander2024", frozenset({("autoregressive", "diag"), ("autoregressive", "aug")}),
    _predictions, flow_horizon, measurements,
    plots={"rank": f"{__package__}.sander2024_plots:plot_rank"})
