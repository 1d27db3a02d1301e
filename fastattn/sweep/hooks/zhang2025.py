"""Zhang et al. 2025's theory in a sweep: plateau levels (Eq. 19/26), the minimum L* (Eq. 25/46;
for H separate heads of rank R with HR < D, the level L(M_HR) they end at), first-plateau
durations (Eq. 72 for separate KQ, Eq. 54 for merged KQ) and the horizon they give.

Every linear-regression run gets these columns; they are NaN where the formulas do not apply
(label noise, a task-prior mean, in-weight tasks). Plots: `zhang2025_plots`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from fastattn.sweep.hooks.base import Columns, Hooks
from fastattn.sweep.horizon import Horizon
from fastattn.tasks import LinearRegression
from fastattn.theory import zhang2025 as th
from fastattn.training import Trajectory

#: models with the closed-form population flow (their flat parameters start with the value weights)
FLOW_MODELS = ("merged", "separate", "cubic_mlp")
SEPARATE_MODELS = ("separate", "softmax_separate")
MERGED_MODELS = ("merged", "cubic_mlp", "softmax_merged")


def theory_applies(task: LinearRegression) -> bool:
    """Eq. 19/25 assume w ~ N(0, I), no label noise and no fixed task (our defaults)."""
    return (task.noise == 0 and task.fixed_task_fraction == 0
            and np.allclose(task.w_second_moment(), np.eye(task.dim)))


def typical_value_weight(task: LinearRegression, model: Mapping[str, Any]) -> float:
    """Typical |v_i(0)|: the standard deviation of the value weights (the first block of the flat
    vector) at initialisation, from the family's own initial statistics (`init_variances`:
    init/√H in the paper scheme, App. C.2, init in the code scheme)."""
    from fastattn.models import get_model
    from fastattn.training.build import model_config

    variances = get_model(model["kind"]).model.init_variances(model_config(model, task))
    return math.sqrt(next(iter(variances.values())))


def predictions(task: LinearRegression, model: Mapping[str, Any], params0: np.ndarray | None,
                horizon: Horizon) -> Columns:
    """Levels L(M_0..M_D), L*, the directions m* the target needs and the time to learn them,
    first-plateau durations, and v₀ (the RMS initial value weight, or the typical one before the
    model is built)."""
    nan = float("nan")
    out: Columns = {"theory_L0": nan, "theory_Lstar": nan, "theory_levels": None,
                    "theory_m_target": None, "theory_t_estimate": nan,
                    "theory_eq72_duration": nan, "theory_eq54_duration": nan,
                    "theory_n_conspicuous": None, "v0_rms": nan}
    lam = np.asarray(task.eigvals, dtype=float)
    inv_n = task.inv_context_mean()
    name = model["kind"]
    heads = int(model["heads"])
    v0 = typical_value_weight(task, model)
    if params0 is not None and name in FLOW_MODELS:
        v0 = float(np.sqrt(np.mean(np.asarray(params0)[:heads] ** 2))) or v0
    out["v0_rms"] = v0
    if theory_applies(task):
        levels = th.fixed_point_losses(lam, inv_n)
        # H separate heads of rank R are HR tied rank-1 heads, each learning one direction
        # (Eq. 20): with HR < D the flow ends at M_HR, not M_D
        reach = min(lam.size, heads * int(model.get("rank", 1))) if name in SEPARATE_MODELS \
            else lam.size
        out["theory_L0"] = float(levels[0])
        out["theory_Lstar"] = float(levels[reach])
        out["theory_levels"] = [float(x) for x in levels[:reach + 1]]   # the levels it visits
        target = (1 + horizon.converge_rel) * levels[reach]
        m = int(np.argmax(levels <= target * (1 - 1e-12)))
        out["theory_m_target"] = m
    else:
        m = lam.size
    m = max(m, 1)
    if v0 > 0:
        out["theory_t_estimate"] = float(sum(1.0 / (lam[k] ** 2 * v0) for k in range(m)))
        if name in SEPARATE_MODELS:
            out["theory_eq72_duration"] = th.plateau_duration(float(lam[0]), v0)
            out["theory_n_conspicuous"] = th.n_conspicuous_plateaus(lam.size, int(model.get("rank", 1)))
        if name in MERGED_MODELS:
            s0 = heads * v0 ** 2            # ‖w_2(0)‖² = ‖v(0)‖²
            if 0 < s0 < 1:
                out["theory_eq54_duration"] = th.merged_plateau_time(lam, s0)
    return out


def flow_horizon(theory: Columns, horizon: Horizon) -> tuple[float | None, float | None]:
    """t_end = horizon_factor × Σ_{m<m*} 1/(λ_{m+1}² v₀) (Eq. 72 summed over the directions the
    target needs); target L ≤ (1 + converge_rel)·L*."""
    lstar, est = theory["theory_Lstar"], theory["theory_t_estimate"]
    target = (1 + horizon.converge_rel) * lstar if math.isfinite(lstar) else None
    t_end = float(f"{horizon.horizon_factor * est:.6g}") if math.isfinite(est) else None
    return t_end, target


def measurements(traj: Trajectory, theory: Columns, measured: Columns) -> Columns:
    """Measured plateaus within 10 % of an Eq. 19 level (their count and largest relative error)
    and the final excess loss (L − L*)/L*."""
    out: Columns = {"level_rel_error_max": float("nan"), "n_levels_matched": 0}
    levels = theory.get("theory_levels")
    if levels and measured["plateau_levels"]:
        errs = []
        for level in measured["plateau_levels"]:
            rel = min(abs(level - lv) / lv for lv in levels if lv > 0)
            if rel < 0.1:
                errs.append(rel)
        out["n_levels_matched"] = len(errs)
        out["level_rel_error_max"] = max(errs) if errs else float("nan")
    lstar = theory.get("theory_Lstar", float("nan"))
    out["excess_loss_rel"] = (measured["final_loss"] - lstar) / lstar if lstar and math.isfinite(lstar) \
        else float("nan")
    return out


HOOKS = Hooks(
    "zhang2025",
    frozenset(("linear_regression", m) for m in (*FLOW_MODELS, "softmax_merged", "softmax_separate")),
    predictions, flow_horizon, measurements,
    plots={"duration": f"{__package__}.zhang2025_plots:plot_duration",
           "levels": f"{__package__}.zhang2025_plots:plot_levels"})
