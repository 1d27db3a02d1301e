"""Periodic checkpoints of sampled (sgd/adam) runs, from which a run continues bit for bit.

A checkpoint is taken between two steps: the model and optimiser state after `step` steps and the
records made so far. Batches are drawn from (data seed, step), so nothing else is needed for the
continued run to repeat exactly what the uninterrupted one would have done. The file is written
atomically (`records.atomic_write`): a crash while writing leaves the previous checkpoint.

The file holds data only, so loading it cannot run code: it is read with
`torch.load(weights_only=True)` (tensors, numbers, strings, lists, tuples and dicts; no pickled
objects), numpy arrays and scalars travel as tensors tagged with their kind, and the run's config
as a JSON string. A file that is not such a checkpoint (an older fastattn's pickle, or a crafted
one) is refused with one line before anything in it is built.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from fastattn.training.records import RecordError, atomic_write

if TYPE_CHECKING:
    from fastattn.outputs import Output

#: the `format` entry of a checkpoint file of this layout
FORMAT = "fastattn-checkpoint-2"
_ARRAY, _SCALAR = "__ndarray__", "__npscalar__"


#: steps between two checkpoints by default: a fast run (thousands of steps a second) loses at most
#: this many steps to Ctrl-C even before `Checkpointing.every` seconds have passed
EVERY_STEPS = 1000


@dataclass(frozen=True)
class Checkpointing:
    """Where and how often a sampled run checkpoints, and whether it continues from the file.

    A checkpoint is written when `every` seconds or `every_steps` steps have passed since the
    last one (or since the run started), whichever comes first.

    Attributes:
        path: the checkpoint file (`torch.save` format, data only: see the module docstring).
        every: seconds between checkpoints (0: before every step).
        every_steps: steps between checkpoints (None: by time only).
        resume: continue from `path` (which must exist and belong to the same run).
        output: the output folder `path` is in (`fastattn.outputs.Output`), or None: the file is
            then written, replaced and removed only as that folder's manifest allows (a file
            fastattn did not write is never replaced or deleted), and a checkpoint resumed from
            is entered there once it has proved to be this run's.
    """

    path: str | os.PathLike
    every: float = 60.0
    every_steps: int | None = EVERY_STEPS
    resume: bool = False
    output: Output | None = None

    def __post_init__(self) -> None:
        if not self.every >= 0:
            raise ValueError(f"checkpoint interval must be >= 0 seconds; got {self.every}")
        if self.every_steps is not None and (isinstance(self.every_steps, bool) or not isinstance(
                self.every_steps, int) or self.every_steps < 1):
            raise ValueError(f"checkpoint interval every_steps must be an integer >= 1 (or None: "
                             f"by time only); got {self.every_steps!r}")


class Checkpointer:
    """Writes a run's checkpoints every `Checkpointing.every` seconds or `every_steps` steps."""

    def __init__(self, spec: Checkpointing | None, config: dict[str, Any]):
        self.spec, self.config = spec, config
        self.last = time.monotonic()
        self.last_step = 0                       # a resumed run: its checkpoint's step (`load`)

    def due(self, step: int) -> bool:
        """Whether to checkpoint before step `step` (the state after `step` steps)."""
        if self.spec is None:
            return False
        by_steps = self.spec.every_steps is not None and \
            step - self.last_step >= self.spec.every_steps
        return by_steps or time.monotonic() - self.last >= self.spec.every

    def save(self, state: dict[str, Any]) -> None:
        path = Path(self.spec.path)
        doc = {"format": FORMAT, "config": json.dumps(self.config, sort_keys=True),
               "state": _encode(state)}
        if self.spec.output is not None:
            self.spec.output.write(path, lambda fh: torch.save(doc, fh), "wb")
        else:
            atomic_write(path, lambda fh: torch.save(doc, fh), "wb")
        self.last, self.last_step = time.monotonic(), state.get("step", self.last_step)

    def load(self) -> dict[str, Any] | None:
        """The state to continue from (None unless resuming); checks it is this run's."""
        if self.spec is None or not self.spec.resume:
            return None
        path = Path(self.spec.path)
        if not path.exists():
            raise FileNotFoundError(f"no checkpoint to resume from at {path}")
        try:
            doc = torch.load(path, weights_only=True)       # data only: no code runs
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} file")
            config, state = json.loads(doc["config"]), _decode(doc["state"])
        except Exception as exc:
            # torch's own message spans many lines and suggests weights_only=False: not that
            what = " ".join(str(exc).split("\n", 1)[0].split())[:120]
            raise RecordError(f"{path}: not a checkpoint this version can read ({what}); it was "
                              "refused unread (nothing in it was run): delete it to train the run "
                              "from the start") from None
        if config != json.loads(json.dumps(self.config, sort_keys=True)):
            raise ValueError(f"{path} is the checkpoint of another run (its task, model or trainer "
                             "options differ); resume with the options it was written with")
        self.last_step = state.get("step", 0)
        if self.spec.output is not None:        # this run's: it may be replaced as it goes
            self.spec.output.record(path)
        return state

    def remove(self) -> None:
        if self.spec is None:
            return
        if self.spec.output is not None:
            self.spec.output.remove(Path(self.spec.path))
        else:
            Path(self.spec.path).unlink(missing_ok=True)



def _encode(value: Any) -> Any:
    """`value` as data `torch.load(weights_only=True)` reads back: numpy arrays and scalars become
    tagged tensors (bit for bit, dtype kept); dicts, lists, tuples, tensors, numbers, strings and
    None pass through. Anything else is a TypeError (it could not be loaded without pickle)."""
    if isinstance(value, np.ndarray):
        return {_ARRAY: torch.from_numpy(np.ascontiguousarray(value).copy())}
    if isinstance(value, np.generic):
        return {_SCALAR: torch.from_numpy(np.asarray(value).reshape(1).copy())}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_encode(v) for v in value)
    if isinstance(value, str):
        return str(value)                       # a `Stop` as its word: no enum class to unpickle
    if value is None or isinstance(value, (bool, int, float, torch.Tensor)):
        return value
    raise TypeError(f"a checkpoint holds data only; got a {type(value).__name__}")


def _decode(value: Any) -> Any:
    """The inverse of `_encode`."""
    if isinstance(value, dict):
        if value.keys() == {_ARRAY}:
            return value[_ARRAY].numpy()
        if value.keys() == {_SCALAR}:
            return value[_SCALAR].numpy()[0]
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_decode(v) for v in value)
    return value
