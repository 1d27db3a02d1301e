"""Why a run stopped: the one declaration of the stop statuses.

Every trainer (the C++ integrators behind `population.integrate`, population GD, sampled SGD/Adam,
the fused He step, task-centric SGD) ends a run with one of these; run records, sweep rows, the
`fastattn train` summary and the sweep summary carry the word unchanged. The statuses live here,
in the objective layer, because the integrators are their lowest producer and every layer above
may import them.
"""

from __future__ import annotations

from enum import Enum


class Stop(str, Enum):
    """A stop status: a `str` (records hold the bare word), with its meaning in `MEANING`.
    `str` and f-strings give the bare word on every Python (enum.StrEnum is 3.11+)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    STEPS = "steps"
    T_END = "t_end"
    TARGET_LOSS = "target_loss"
    TARGET_METRIC = "target_metric"
    CONVERGED = "converged"
    EVENT = "event"
    MAX_EVALS = "max_evals"
    MAX_STEPS = "max_steps"
    MAX_SECONDS = "max_seconds"
    DIVERGED = "diverged"
    STEP_TOO_SMALL = "step_too_small"
    INTERRUPTED = "interrupted"


#: what stopped a run of each status, as the sweep summary and `Trajectory.status` explain it
MEANING: dict[Stop, str] = {
    Stop.STEPS: "ran all its steps (gd, sgd, adam, task_sgd)",
    Stop.T_END: "reached its end time t_end (flow)",
    Stop.TARGET_LOSS: "its training loss reached target_loss (a sweep's flow: the theory's final "
                      "loss within converge_rel, unless given)",
    Stop.TARGET_METRIC: "a held-out metric reached target_metric (sgd/adam)",
    Stop.CONVERGED: "its gradient norm fell below grad_tol",
    Stop.EVENT: "a terminal event crossed its level",
    Stop.MAX_EVALS: "spent its cap on gradient evaluations (max_evals)",
    Stop.MAX_STEPS: "spent its cap on integrator steps (max_steps)",
    Stop.MAX_SECONDS: "spent its wall-time budget (max_seconds)",
    Stop.DIVERGED: "its loss diverged (the record ends at the last state before)",
    Stop.STEP_TOO_SMALL: "the adaptive integrator's step fell below its floor",
    Stop.INTERRUPTED: "Ctrl-C or SIGTERM (the record ends at the state it reached)",
}


def stop_of(word: str, steps: bool = False) -> Stop:
    """The `Stop` of a status word an integrator returned; `steps`: the run is population GD, whose
    Euler integrator reports reaching its last step as t_end (it stopped at its step count)."""
    status = Stop(word)
    return Stop.STEPS if steps and status is Stop.T_END else status
