"""The interface of a paper's sweep hooks (docs/sweeps.md, "Per-paper hooks")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastattn.sweep.horizon import Horizon
from fastattn.training import Trajectory

Columns = dict[str, Any]


@dataclass(frozen=True)
class Hooks:
    """What one paper's theory adds to the sweep runs of the (task kind, model kind) pairs it covers.

    Attributes:
        paper: the paper's name, as in `fastattn/theory/<paper>.py` and `fastattn/experiments/<paper>/`.
        pairs: the (task kind, model kind) pairs it covers: a `fastattn.tasks.TASKS` name and a
            model name (`--model`).
        predictions: `(task, model, params0, horizon) -> columns`: the theory's numbers for a run.
            `model` holds the run's resolved model options; `params0` the initial flat parameters
            `[P]`, or None at planning time (before any model is built). Every call returns the
            same columns, NaN or None where a formula does not apply, so that all rows of a sweep
            have them; names start with "theory_" by convention.
        flow_horizon: `(predictions, horizon) -> (t_end, target_loss)`: how far a flow run without
            --t-end goes and where one without --target-loss stops; None where the theory gives no
            value (no target; without t_end the run fails with a message asking for --t-end).
        measurements: `(trajectory, predictions, measured) -> columns` measured from a finished run
            against the theory; `measured` holds the paper-independent columns (plateaus, drops,
            final loss: `fastattn.sweep.runner.measure`) and, under "_task", the run's task.
        plots: plot kind -> "module:function" drawing `(table, figure)`, imported when drawn
            (`fastattn plot --kind KIND`), so a sweep worker never imports matplotlib.
        events: `(task options, model options) -> {name: event}`: crossings an exact flow run
            locates as integration events (`population.CoordinateEvent` / `LossEvent` as dicts,
            in the flow's flat layout); `measurements` finds their first times (the integrators'
            time) in `measured["_events"]` {name: t}, absent where not crossed.
        units: column -> unit, written into the results table's column metadata ("unit") and
            documented in docs/sweeps.md.
    """

    paper: str
    pairs: frozenset[tuple[str, str]]
    predictions: Callable[[Any, Mapping[str, Any], np.ndarray | None, Horizon], Columns]
    flow_horizon: Callable[[Columns, Horizon], tuple[float | None, float | None]]
    measurements: Callable[[Trajectory, Columns, Columns], Columns]
    plots: Mapping[str, str] = field(default_factory=dict)
    events: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, dict[str, Any]]] | None = None
    units: Mapping[str, str] = field(default_factory=dict)
