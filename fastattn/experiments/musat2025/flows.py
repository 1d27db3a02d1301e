"""Emergence runs of Musat et al. 2025's exact models (spec §7, §11): the 3-parameter and 19-parameter
flows (or GD) from zero on orthonormal data as `RunSpec`s whose events are the first crossings of
Def. 1–3, and the emergence times read off a finished run's events.

A flow run carries, for each of γ₃, β₂, α₃ and each level of `LEVELS`, an upward and a downward
crossing event, and the loss falling to ½; it stops once the loss is at `STOP_LOSS`, just past the
drop, which comes after every crossing in each setting of the figures (t_loss ≥ 1.13 t_ICL: a
missing crossing is an error, not a silent NaN). Times are the paper's
(θ̇ = −∇L: `theory.musat2025.PAPER_TIME_PER_CORE_TIME` per integrator time unit); a GD run's are
steps. `fastattn.population.emergence` locates the same times by restarted terminal events (the
reference the tests hold these runs to).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from fastattn.experiments.recipe import Run, RunSpec, preset_run
from fastattn.models.disentangled import NAMES
from fastattn.population import CoordinateEvent, LossEvent
from fastattn.theory.musat2025 import PAPER_TIME_PER_CORE_TIME

#: the (γ₃, β₂, α₃) coordinates of each exact model, by the names of Def. 1–3's times
COORDINATES = {"three_param": {"T_gamma": 2, "T_beta": 1, "T_alpha": 0},
               "gram19": {"T_gamma": NAMES.index("gamma3"), "T_beta": NAMES.index("beta2"),
                          "T_alpha": NAMES.index("alpha3")}}
#: the thresholds whose crossings every run locates: ½ (Def. 1–3) and Fig. 6's 0.1
LEVELS = (0.5, 0.1)
LOSS_LEVEL = 0.5
#: a flow stops once its loss is here: just past the drop (later costs time: an evaluation of the
#: uniform-query objective is O(N²))
STOP_LOSS = 0.45
#: loss records and snapshots of a flow run: few, since the adaptive integrators step onto each
#: record time (400 records double the evaluations of the uniform-query flows); the figures read
#: the events
RECORDS = 20
#: each model's integrator and tolerances (else the trainer's defaults): RK45 for the 3 smooth
#: parameters; the order-4 stabilized method for the 19, ~3× faster than RK45 there at the same
#: event times
INTEGRATORS = {"three_param": {"integrator": "rk45", "rtol": 1e-10, "atol": 1e-14},
               "gram19": {"integrator": "stabilized", "rtol": 1e-7}}


def _events(kind: str, loss_level: float | None, until: str | None = None
            ) -> tuple[list[str], list[Any]]:
    """The events' names ("T_beta>=0.1", "T_beta<0.1", "t_loss") and the events, in order; the
    event named `until` is terminal."""
    names, events = [], []
    for key, index in COORDINATES[kind].items():
        for level in LEVELS:
            for direction, sign in ((1, ">="), (-1, "<")):
                names.append(f"{key}{sign}{level}")
                events.append(CoordinateEvent(index, level, direction=direction,
                                              terminal=names[-1] == until))
    if loss_level is not None:
        names.append("t_loss")
        events.append(LossEvent(float(loss_level), direction=-1))
    if until is not None and until not in names:
        raise ValueError(f"until={until!r} is not one of the events {names}")
    return names, events


def _run(label: str, kind: str, N: int, query: str | None, mask: str | None, train: dict[str, Any],
         group: dict[str, Any]) -> RunSpec:
    """The run of the (induction, `kind`) preset (Theorem 2's setting: orthonormal data, q = N,
    summed loss, strict mask, zero init) at N pairs, D = 2N, query `query` and mask `mask` (None:
    the preset's), trained by `train`; its group `group` plus the run's N, query and mask."""
    task = {"dim": 2 * N, "context": N} | ({"query": query} if query else {})
    spec = preset_run(label, "induction", kind, task=task, model={"mask": mask} if mask else {},
                      train=train)
    return replace(spec, group={"model": kind, "N": N, "query": spec.task.query,
                                "mask": spec.model.mask} | group)


def flow_spec(label: str, kind: str, N: int, query: str | None = None, mask: str | None = None,
              t_max: float | None = None, until: str | None = None) -> RunSpec:
    """The exact flow of `kind` ("three_param", "gram19") from zero, q = `query`, under `mask`
    (None: the preset's q = N, strict), locating every crossing of `LEVELS` and the loss drop, to
    the loss `STOP_LOSS`; it gives up at paper time `t_max` (default 20 N² + 100 N). `until` (e.g.
    "T_alpha>=0.5"): stop at that crossing instead, without the loss drop, for a figure whose last
    crossing it is (a crossing the run did not reach is an error of `emergence`)."""
    t_max = 20.0 * N**2 + 100.0 * N if t_max is None else float(t_max)
    names, events = _events(kind, None if until else LOSS_LEVEL, until)
    train = {"t_end": t_max / PAPER_TIME_PER_CORE_TIME, **INTEGRATORS[kind], "events": tuple(events),
             "n_records": RECORDS, "n_snapshots": RECORDS} | ({} if until else {"target_loss": STOP_LOSS})
    return _run(label, kind, N, query, mask, train, {"events": names})


def gd_spec(label: str, N: int, lr: float, *, query: str | None = None, mask: str | None = None,
            max_steps: int | None = None) -> RunSpec:
    """GD (θ ← θ − lr ∇L from zero) of the 3-parameter model for `max_steps` (default
    ⌈4N²/lr⌉ + 100) steps, locating the crossings of `LEVELS` and the loss drop between steps."""
    names, events = _events("three_param", LOSS_LEVEL)
    steps = int(max_steps or math.ceil(4.0 * N**2 / lr) + 100)
    train = {"method": "gd", "lr": lr, "steps": steps, "events": tuple(events)}
    return _run(label, "three_param", N, query, mask, train, {"lr": lr, "events": names})


def _first(run: Run) -> dict[str, float]:
    """{event name: integrator time of its first crossing}."""
    names = run.spec.group["events"]
    out: dict[str, float] = {}
    for hit in run.traj.events:
        out.setdefault(names[hit.event], float(hit.t))
    return out


def emergence(run: Run, thresholds=(0.5, 0.5, 0.5), loss: bool = True) -> dict[str, float]:
    """{"T_gamma", "T_beta", "T_alpha", "t_icl"} (+ "t_loss") of a finished `flow_spec` run in paper
    time: each T the first upward crossing of its threshold (θ_γ, θ_β, θ_α), t_icl their maximum,
    which is Def. 3's inf{t : all three ≥ threshold} as none fell back below its threshold before
    (a ValueError otherwise, and when a crossing was not reached)."""
    first, out = _first(run), {}
    for key, level in zip(("T_gamma", "T_beta", "T_alpha"), thresholds, strict=True):
        if f"{key}>={level}" not in first:
            raise ValueError(f"run {run.spec.label}: {key} did not reach {level} by the run's end "
                             f"(status {run.traj.status!r}); raise t_max")
        out[key] = first[f"{key}>={level}"]
    t_icl = max(out.values())
    for key, level in zip(("T_gamma", "T_beta", "T_alpha"), thresholds, strict=True):
        if first.get(f"{key}<{level}", math.inf) < t_icl:
            raise ValueError(f"run {run.spec.label}: {key} fell back below {level} before the last "
                             "coordinate crossed; t_icl is not the latest first crossing here")
    out["t_icl"] = t_icl
    if loss:
        if "t_loss" not in first:
            raise ValueError(f"run {run.spec.label}: the loss did not fall to {LOSS_LEVEL}")
        out["t_loss"] = first["t_loss"]
    return {k: v * PAPER_TIME_PER_CORE_TIME for k, v in out.items()}


def emergence_steps(run: Run, thresholds=(0.5, 0.5, 0.5), loss: bool = True) -> dict[str, int | None]:
    """The GD version of `emergence` for a `gd_spec` run: the first steps at which each coordinate
    reaches its threshold (a crossing inside step k counts as step k), t_icl their maximum, and
    (`loss`) "t_loss", the first step at which the loss is ½ (None: never; a step size past GD's
    stability limit can carry the three over their thresholds and diverge)."""
    lr = run.spec.train.lr
    first = {k: math.ceil(t / (2.0 * lr) - 1e-9) for k, t in _first(run).items()}
    out: dict[str, int | None] = {}
    for key, level in zip(("T_gamma", "T_beta", "T_alpha"), thresholds, strict=True):
        if f"{key}>={level}" not in first:
            raise ValueError(f"run {run.spec.label}: {key} did not reach {level} in "
                             f"{run.spec.train.steps} steps (status {run.traj.status!r})")
        out[key] = first[f"{key}>={level}"]
    out["t_icl"] = max(out.values())
    if loss:
        out["t_loss"] = first.get("t_loss")
    return out


def by_group(runs: list[Run], **match: Any) -> Run:
    """The one run whose group has these values."""
    found = [r for r in runs if all(r.spec.group.get(k) == v for k, v in match.items())]
    if len(found) != 1:
        raise ValueError(f"{len(found)} runs match {match}")
    return found[0]
