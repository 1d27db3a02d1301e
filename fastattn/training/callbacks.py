"""Live logging: a run hands each loss record to its callbacks as soon as the record is known.

`train(model, task, ..., callbacks=[TensorBoardLogger("tb/run0")])`. A callback is any object with
`on_record(record)`; it may also have `on_progress(time, loss, n_evals)` (an exact flow's running
state, at most every 0.5 s while the integration runs) and `close()` (called once when the run
ends, however it ends). When a record is known depends on the engine:

- the torch loop (sgd/adam on tokens or statistics): at each record step, during the run;
- the fused He step: after each call of the C++ step, that is at each evaluation or record stop;
- the exact flow and GD: the C++ integrator runs the whole horizon in one call, so the records
  arrive when it returns; `on_progress` reports the state while it runs.

A callback's exception propagates and stops the run like any other error: a logger that cannot
write should say so, not drop records silently.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Record:
    """One loss record of a run.

    Attributes:
        index: the record's position in the trajectory (0, 1, ...).
        time: the run's time at the record (the trajectory's `time`: flow time, or 2ηk for a run
            of k optimiser steps; docs/conventions.md).
        step: optimiser steps taken (None for the exact flow).
        loss: the training loss (the exact population loss for flow and GD).
        test_loss: held-out losses by test set (and "population" where the pair has one).
        metrics: held-out metrics (the token tasks).
        wall_time: seconds since the run started.
    """

    index: int
    time: float
    step: int | None
    loss: float
    test_loss: Mapping[str, float] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    wall_time: float = 0.0


@runtime_checkable
class Callback(Protocol):
    def on_record(self, record: Record) -> None: ...


class Emitter:
    """Hands records to callbacks, each once and in order. The engines call `emit` with what they
    know so far; a record goes out once its test losses and metrics are complete (the fused step
    evaluates a record's tests after its loss)."""

    def __init__(self, callbacks: Sequence[Any]):
        for cb in callbacks:
            if not callable(getattr(cb, "on_record", None)):
                raise TypeError(f"callbacks: {type(cb).__name__} has no on_record(record) method; "
                                "give objects with on_record (fastattn.training.callbacks.Callback)")
        self.callbacks = list(callbacks)
        self.sent = 0
        self.start = time.perf_counter()

    def __bool__(self) -> bool:
        return bool(self.callbacks)

    def emit(self, times: Sequence[float], steps: Sequence[int] | None, losses: Sequence[float],
             tests: Mapping[str, Sequence[float]] | None = None,
             metrics: Mapping[str, Sequence[float]] | None = None) -> None:
        """Send the records [sent, n) where n is the number of records complete in these lists."""
        tests, metrics = tests or {}, metrics or {}
        n = min([len(losses), *(len(v) for v in tests.values()), *(len(v) for v in metrics.values())])
        wall = time.perf_counter() - self.start
        for j in range(self.sent, n):
            rec = Record(index=j, time=float(times[j]),
                         step=None if steps is None or steps[j] < 0 else int(steps[j]),
                         loss=float(losses[j]), test_loss={k: float(v[j]) for k, v in tests.items()},
                         metrics={k: float(v[j]) for k, v in metrics.items()}, wall_time=wall)
            for cb in self.callbacks:
                cb.on_record(rec)
        self.sent = max(self.sent, n)

    def progress(self, t: float, loss: float, n_evals: int) -> None:
        for cb in self.callbacks:
            hook = getattr(cb, "on_progress", None)
            if hook is not None:
                hook(t, loss, n_evals)

    @property
    def wants_progress(self) -> bool:
        return any(callable(getattr(cb, "on_progress", None)) for cb in self.callbacks)

    def close(self) -> None:
        for cb in self.callbacks:
            done = getattr(cb, "close", None)
            if done is not None:
                done()


class TensorBoardLogger:
    """Writes each record to TensorBoard event files in `log_dir` (`torch.utils.tensorboard`;
    needs the `tensorboard` package: `pip install "fastattn[log]"`).

    Scalars: `loss`, `test_loss/<set>`, `metrics/<name>` and `time` at global step = the optimiser
    step (sampled runs and GD) or the record index (the flow, whose x-axis is `time`); the event's
    wall time is the record's. `progress/loss` at global step = evaluations, while a flow runs.
    """

    def __init__(self, log_dir: str | Path):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise ImportError(f"TensorBoardLogger needs the tensorboard package ({exc}); "
                              "pip install tensorboard") from None
        self.writer = SummaryWriter(log_dir=str(log_dir))
        self.start = time.time()

    def on_record(self, record: Record) -> None:
        step = record.step if record.step is not None else record.index
        wall = self.start + record.wall_time
        self.writer.add_scalar("loss", record.loss, step, walltime=wall)
        self.writer.add_scalar("time", record.time, step, walltime=wall)
        for name, value in record.test_loss.items():
            self.writer.add_scalar(f"test_loss/{name}", value, step, walltime=wall)
        for name, value in record.metrics.items():
            self.writer.add_scalar(f"metrics/{name}", value, step, walltime=wall)

    def on_progress(self, t: float, loss: float, n_evals: int) -> None:
        self.writer.add_scalar("progress/loss", loss, n_evals)
        self.writer.add_scalar("progress/time", t, n_evals)

    def close(self) -> None:
        self.writer.flush()
        self.writer.close()


class WandbLogger:
    """Logs each record to Weights & Biases (`pip install wandb`); `init` goes to `wandb.init`
    (project, name, mode="offline", ...). The run's x-axis is `step` (the optimiser step, or the
    record index for the flow); `time` is logged beside it."""

    def __init__(self, **init: Any):
        try:
            import wandb
        except ImportError as exc:
            raise ImportError(f"WandbLogger needs the wandb package ({exc}); pip install wandb") \
                from None
        self.run = wandb.init(**init)

    def on_record(self, record: Record) -> None:
        row = {"loss": record.loss, "time": record.time, "wall_time": record.wall_time}
        row |= {f"test_loss/{k}": v for k, v in record.test_loss.items()}
        row |= {f"metrics/{k}": v for k, v in record.metrics.items()}
        self.run.log(row, step=record.step if record.step is not None else record.index)

    def close(self) -> None:
        self.run.finish()


def check_log(spec: str) -> None:
    """Refuse a `--log` value in one line before anything is written: an unknown kind, or a
    TensorBoard folder that cannot be created or written (it is created here, as `--out` is)."""
    from fastattn.outputs import probe

    kind, _, arg = spec.partition(":")
    if kind == "tensorboard":
        if not arg:
            raise ValueError("--log tensorboard needs a folder: --log tensorboard:DIR")
        try:
            probe(Path(arg))
        except OSError as exc:
            why = "is not a folder" if Path(arg).exists() and not Path(arg).is_dir() else \
                f"cannot be written ({exc.strerror or exc})"
            raise ValueError(f"--log {spec}: {arg} {why}; give a writable folder") from None
    elif kind != "wandb":
        raise ValueError(f"--log {spec!r}: give tensorboard:DIR or wandb[:PROJECT]")


def logger(spec: str) -> Callback:
    """The callback of a `--log` value: "tensorboard:DIR" or "wandb" / "wandb:PROJECT"."""
    check_log(spec)
    kind, _, arg = spec.partition(":")
    if kind == "tensorboard":
        return TensorBoardLogger(arg)
    return WandbLogger(**({"project": arg} if arg else {}))
