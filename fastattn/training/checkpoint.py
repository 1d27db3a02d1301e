"""Periodic checkpoints of sampled (sgd/adam) runs, from which a run continues bit for bit.

A checkpoint is taken between two steps: the model and optimiser state after `step` steps and the
records made so far. Batches are drawn from (data seed, step), so nothing else is needed for the
continued run to repeat exactly what the uninterrupted one would have done. The file is written
atomically (`records.atomic_write`): a crash while writing leaves the previous checkpoint.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fastattn.training.records import RecordError, atomic_write


@dataclass(frozen=True)
class Checkpointing:
    """Where and how often a sampled run checkpoints, and whether it continues from the file.

    Attributes:
        path: the checkpoint file (`torch.save` format).
        every: seconds between checkpoints (0: before every step).
        resume: continue from `path` (which must exist and belong to the same run).
    """

    path: str | os.PathLike
    every: float = 60.0
    resume: bool = False

    def __post_init__(self) -> None:
        if not self.every >= 0:
            raise ValueError(f"checkpoint interval must be >= 0 seconds; got {self.every}")


class Checkpointer:
    """Writes a run's checkpoints at most every `Checkpointing.every` seconds."""

    def __init__(self, spec: Checkpointing | None, config: dict[str, Any]):
        self.spec, self.config = spec, config
        self.last = time.monotonic()

    def due(self) -> bool:
        return self.spec is not None and time.monotonic() - self.last >= self.spec.every

    def save(self, state: dict[str, Any]) -> None:
        path = Path(self.spec.path)
        atomic_write(path, lambda fh: torch.save({"config": self.config, **state}, fh), "wb")
        self.last = time.monotonic()

    def load(self) -> dict[str, Any] | None:
        """The state to continue from (None unless resuming); checks it is this run's."""
        if self.spec is None or not self.spec.resume:
            return None
        path = Path(self.spec.path)
        if not path.exists():
            raise FileNotFoundError(f"no checkpoint to resume from at {path}")
        try:
            state = torch.load(path, weights_only=False)
        except Exception as exc:
            raise RecordError(f"{path}: unreadable checkpoint ({type(exc).__name__}: {exc})") from exc
        if state.get("config") != self.config:
            raise ValueError(f"{path} is the checkpoint of another run (its task, model or trainer "
                             "options differ); resume with the options it was written with")
        return state

    def remove(self) -> None:
        if self.spec is not None:
            Path(self.spec.path).unlink(missing_ok=True)
