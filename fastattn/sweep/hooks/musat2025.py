"""Musat et al. 2025's theory in a sweep: the emergence times of the induction head (Def. 1–3) of
the exact 3-parameter and 19-parameter flows, found as integration events, beside the asymptotics
T_β ≈ 0.95985 N² + 0.790 N and T_α ≈ 1.71125 N² + 0.682 N (spec §7.6; thresholds ½, q = N).

Time: the paper's gradient-flow time (θ̇ = −∇L), half the integrators' time
(`theory.musat2025.PAPER_TIME_PER_CORE_TIME`); every `t_*` and `theory_t_*` column is in it (the
table's column metadata says "paper time"). The runs start from zero (`--init-scale 0`, the paper's
initialisation) for the predictions to apply; a random start shifts the times a little.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fastattn.models.disentangled import NAMES
from fastattn.sweep.hooks.base import Columns, Hooks
from fastattn.sweep.horizon import Horizon
from fastattn.theory import musat2025 as th
from fastattn.training import Trajectory

#: the model kinds with an exact population flow on the induction task and their (γ₃, β₂, α₃) indices
COORDINATES = {"three_param": {"t_gamma": 2, "t_beta": 1, "t_alpha": 0},
               "gram19": {"t_gamma": NAMES.index("gamma3"), "t_beta": NAMES.index("beta2"),
                          "t_alpha": NAMES.index("alpha3")}}
THRESHOLD = 0.5
#: the loss-drop time: the first time the loss falls to this level (1 at zero, 1 − 1/(2N) on the
#: plateau)
LOSS_DROP = 0.5
#: a flow run without --target-loss stops here: past the drop, every event is behind it
TARGET_LOSS = 0.25
PAPER = "paper time (θ̇ = −∇L; = ½ × the integrators' time)"


def predictions(task, model: Mapping[str, Any], params0, horizon: Horizon) -> Columns:
    """The asymptotic emergence times (q = N: spec §7.6 two-term; q uniform: t_ICL's fit §11.4) and
    the loss-collapse time √(2π) N², in paper time."""
    N = int(task.context)
    nan = float("nan")
    out: Columns = {"theory_t_gamma": nan, "theory_t_beta": nan, "theory_t_alpha": nan,
                    "theory_t_icl": nan, "theory_t_collapse": float(th.loss_collapse_time(N)),
                    "theory_plateau_loss": float(th.plateau_loss(N))}
    if task.query == "last":
        a = th.asymptotic_times(N, (THRESHOLD,) * 3)
        out |= {"theory_t_gamma": a["T_gamma"], "theory_t_beta": a["T_beta"],
                "theory_t_alpha": a["T_alpha"], "theory_t_icl": a["t_icl"]}
    else:
        out["theory_t_icl"] = float(th.uniform_query_t_icl(N))
    return out


def flow_horizon(theory: Columns, horizon: Horizon) -> tuple[float | None, float | None]:
    """t_end = horizon_factor × the loss-collapse time (in the integrators' time); stop once the
    loss is at TARGET_LOSS, past the drop (≈ 1.46 t_ICL at q = N)."""
    t = horizon.horizon_factor * theory["theory_t_collapse"] / th.PAPER_TIME_PER_CORE_TIME
    return float(f"{t:.6g}"), TARGET_LOSS


def events(task: Mapping[str, Any], model: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Upward crossings of γ₃, β₂, α₃ through ½ and the loss falling to LOSS_DROP."""
    coords = COORDINATES.get(model["kind"], {})
    out = {name: {"index": i, "level": THRESHOLD, "direction": 1} for name, i in coords.items()}
    out["t_loss_drop"] = {"level": LOSS_DROP, "direction": -1}
    return out


def measurements(traj: Trajectory, theory: Columns, measured: Columns) -> Columns:
    """t_gamma, t_beta, t_alpha (first crossings of ½), t_icl = their maximum (Def. 3), the
    loss-drop time, all in paper time; t_icl relative to the two-term asymptote."""
    hits = measured.get("_events", {})
    out: Columns = {k: hits[k] * th.PAPER_TIME_PER_CORE_TIME if k in hits else float("nan")
                    for k in ("t_gamma", "t_beta", "t_alpha", "t_loss_drop")}
    times = [out[k] for k in ("t_gamma", "t_beta", "t_alpha")]
    out["t_icl"] = max(times) if all(math.isfinite(t) for t in times) else float("nan")
    pred = theory.get("theory_t_icl", float("nan"))
    out["t_icl_rel_error"] = (out["t_icl"] - pred) / pred if math.isfinite(pred) else float("nan")
    return out


TIME_COLUMNS = ("t_gamma", "t_beta", "t_alpha", "t_icl", "t_loss_drop", "theory_t_gamma",
                "theory_t_beta", "theory_t_alpha", "theory_t_icl", "theory_t_collapse")

HOOKS = Hooks(
    "musat2025", frozenset(("induction", m) for m in COORDINATES),
    predictions, flow_horizon, measurements,
    plots={"t_icl": f"{__package__}.musat2025_plots:plot_t_icl"},
    events=events, units=dict.fromkeys(TIME_COLUMNS, PAPER))
