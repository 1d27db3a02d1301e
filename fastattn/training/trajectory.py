"""A training trajectory: what every trainer returns, saved to and loaded from a run record."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fastattn.configs import MODEL_CARDS
from fastattn.population import EventHit
from fastattn.population.stops import Stop
from fastattn.training.records import RecordError, read_record, write_record

#: what a record's time is, for every model: the integrators' flow (docs/conventions.md, "Time")
RECORD_TIME = "time t (dθ/dt = −½∇L; 2η per step)"


def time_label(config: Mapping[str, Any]) -> str:
    """The x label of a run's record time t, with its model's paper time in terms of t (config: a
    record's {"task", "model", "train"}; the conversion is the model card's `time`, e.g. Musat's
    full weights: "paper time t/(2D) = t/32")."""
    task, model, train = (config.get(k, {}) for k in ("task", "model", "train"))
    if train.get("method") == "adam":
        return "t = 2η × Adam steps, a rescaled step count, not a flow time (read step)"
    card = MODEL_CARDS.get(model.get("kind"))
    if card is None or card.time is None:
        return RECORD_TIME
    return f"{RECORD_TIME}; {card.time.describe(task, train)}"


@dataclass
class Trajectory:
    """Losses over time, parameter snapshots and the provenance of one run.

    Attributes:
        time: `[T]` gradient-flow time t (dθ/dt = −½∇L; a GD/SGD step of learning rate η advances t
            by 2η); `time_label` says what it is in the model's paper (records store it).
            Adam: 2ηk for k steps, a rescaled step count and not a flow time (docs/conventions.md).
        step: `[T]` optimiser steps (integrator steps for "flow").
        loss: `[T]` training loss: exact population loss ("flow", "gd"), or the loss on the batch /
            fixed data set ("sgd", "adam").
        test_loss: name → `[T]` losses at the same points, e.g. "population" (exact, when the model
            has a closed form), "in_context", "in_weight".
        snapshot_time: `[S]` times of the parameter snapshots. params: `[S, P]` flat parameters
            (layout of docs/conventions.md); `[1, P]`, the final state, for a sampled run with
            `snapshot_params=False`, whose snapshots are its `series`.
        status: why the run stopped, a `population.stops.Stop` word ("steps" for a gd, sgd or adam
            run that took all its steps, "t_end" for a flow that reached its time, "target_loss",
            "interrupted", ...; `stops.MEANING` says what each means). The last loss record and the
            last snapshot are the state the run stopped in, whatever stopped it.
        events: exact flows: the crossings of the config's events (`EventHit`: event index, time,
            parameters `[P]`), in time order.
        n_evals: gradient evaluations. wall_time: seconds.
        config: {"task", "model", "train"} plain-data configs that rebuild the run.
        meta: versions, git revision, host, creation time.
        series: name → `[S]` scalars of the model at the snapshots (its `snapshot_series`, e.g. the
            linear transformer's ‖p1‖_F, ‖q2‖_F, spec §6.7).
        diverged_at: a diverged run: the step (flow: the time) whose loss diverged; the record
            ends at the last state before it.
        metrics: name → `[T]` held-out measures at the loss records, from a task with `metrics`
            (the token tasks: e.g. "test_acc", "icl_score"; such a task's test losses are among
            them, and `test_loss` then holds only "population" where the pair has one).
        backend: the engine that ran ("engine"), the data stream of a sampled run ("sampler"),
            why a faster engine did not apply ("fallback", when one did not) and how many runs
            one batched call trained ("runs_in_batch").
    """

    time: np.ndarray
    step: np.ndarray
    loss: np.ndarray
    test_loss: dict[str, np.ndarray] = field(default_factory=dict)
    snapshot_time: np.ndarray = field(default_factory=lambda: np.zeros(0))
    params: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    events: list[EventHit] = field(default_factory=list)
    status: str = Stop.T_END
    n_evals: int = 0
    wall_time: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    series: dict[str, np.ndarray] = field(default_factory=dict)
    backend: dict[str, Any] = field(default_factory=dict)
    diverged_at: float | None = None
    metrics: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def final_loss(self) -> float:
        return float(self.loss[-1]) if len(self.loss) else float("nan")

    @property
    def final_params(self) -> np.ndarray:
        """The last parameter snapshot `[P]` (every trainer snapshots its final state)."""
        return self.params[-1]

    @property
    def time_label(self) -> str:
        """What `time` is for this run's model (`time_label` of its config); records store it."""
        return time_label(self.config)

    def save(self, path: str | os.PathLike) -> Path:
        """Write `path.json` + `path.npz` atomically; returns the JSON path."""
        # a float32 model's snapshots hold float32 values: stored as float32 (half the record of
        # a token transformer's snapshots), read back as float64, the same numbers
        params = self.params.astype(np.float32)
        if not np.array_equal(params, self.params):
            params = self.params
        arrays = {"time": self.time, "step": self.step, "loss": self.loss,
                  "snapshot_time": self.snapshot_time, "params": params}
        arrays |= {f"test_loss/{k}": v for k, v in self.test_loss.items()}
        arrays |= {f"series/{k}": v for k, v in self.series.items()}
        arrays |= {f"metrics/{k}": v for k, v in self.metrics.items()}
        if self.events:
            arrays |= {"events/event": np.array([e.event for e in self.events]),
                       "events/t": np.array([e.t for e in self.events]),
                       "events/params": np.stack([e.params for e in self.events])}
        meta = {"kind": "fastattn.Trajectory", "status": self.status, "n_evals": self.n_evals,
                "wall_time": self.wall_time, "final_loss": self.final_loss,
                "config": self.config, "meta": self.meta, "backend": self.backend,
                "diverged_at": self.diverged_at, "time": self.time_label}
        if "population" in self.test_loss and len(self.test_loss["population"]):
            # a sampled run: final_loss is the noisy loss of the last batch; both, named
            meta |= {"final_batch_loss": self.final_loss,
                     "final_population_loss": float(self.test_loss["population"][-1])}
        return write_record(path, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Trajectory:
        meta, arrays = read_record(path, required=("status", "n_evals", "wall_time", "config",
                                                    "meta"))
        missing = [k for k in ("time", "step", "loss", "snapshot_time", "params")
                   if k not in arrays]
        if missing:
            raise RecordError(f"{path}: the run record's arrays lack {', '.join(missing)}")
        tests = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("test_loss/")}
        series = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("series/")}
        metrics = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("metrics/")}
        events = [EventHit(int(e), float(t), p) for e, t, p in
                  zip(*(arrays.get(f"events/{k}", ()) for k in ("event", "t", "params")),
                      strict=True)]
        return cls(time=arrays["time"], step=arrays["step"], loss=arrays["loss"], test_loss=tests,
                   snapshot_time=arrays["snapshot_time"],
                   params=arrays["params"].astype(np.float64), events=events,
                   status=meta["status"], n_evals=int(meta["n_evals"]),
                   wall_time=_number(meta["wall_time"]), config=meta["config"], meta=meta["meta"],
                   series=series, backend=meta.get("backend", {}),
                   diverged_at=meta.get("diverged_at"), metrics=metrics)


def _number(value: float | None) -> float:
    """A float of a record's JSON, where null stands for NaN (strict JSON has no NaN)."""
    return float("nan") if value is None else float(value)
