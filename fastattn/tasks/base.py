"""The Task protocol (what a data distribution offers the trainers) and the task registry.

A task is a frozen dataclass whose fields say everything about the distribution, seeds included,
so that `{"kind": task.kind, **asdict(task)}` rebuilds it (`build_task`). Its sampled batches are
pure functions of (data_seed, step); `loss(model, batch)` is the model's loss on a batch, the
quantity sampled training differentiates. A task may add `metrics(model, test_sets)` → {name:
float}, held-out measures that sampled training records instead of one loss per test set (the
token tasks: accuracies, the ICL score; `Trajectory.metrics`). A task family joins the registry
with `@register_task`; the CLI, sweeps and figure recipes find it by its `kind`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import torch

from fastattn import papers


class Task(Protocol):
    """A data distribution for in-context learning.

    Attributes:
        kind: registry name of the family (e.g. "linear_regression"), recorded in run records.
        losses: names of the sampled losses `loss` computes; the first is the default.
        dim: token dimension D (models are built for it).
        data_seed: seed of the training stream.
        sequence_size: numbers in one sampled sequence (trainers size thread pools by it).
    """

    kind: ClassVar[str]
    losses: ClassVar[tuple[str, ...]]
    dim: int
    data_seed: int

    @property
    def sequence_size(self) -> int: ...

    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> Any:
        """Batch number `step` of the training stream: a pure function of (data_seed, step)."""
        ...

    def loss(self, model: torch.nn.Module, batch: Any, name: str = "query") -> torch.Tensor:
        """The sampled loss `name` (one of `losses`) of `model` on `batch`: a scalar tensor."""
        ...

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> Any:
        """A finite training set of `size` sequences drawn from `seed` (full-batch training).
        `whiten`: a family-specific normalisation; families without one raise ValueError."""
        ...

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, Any]:
        """Held-out batches by name (e.g. "in_context"), drawn from the evaluation `seed`."""
        ...


#: kind → task class. Filled by `register_task` when the task modules of the papers' manifests
#: (`fastattn.papers`) are imported, on the first read; read by the CLI, sweeps and recipes.
TASKS: papers.Registry = papers.Registry("tasks")

_MEMBERS = ("kind", "losses", "sequence_size", "sample", "loss", "fixed_dataset", "test_sets")


def register_task(cls: type) -> type:
    """Class decorator: add a task family to `TASKS` under its `kind`."""
    missing = [m for m in _MEMBERS if not hasattr(cls, m)]
    if missing:
        raise TypeError(f"task class {cls.__name__} lacks {missing} of the Task protocol "
                        "(fastattn.tasks.base.Task)")
    if TASKS.has(cls.kind) and TASKS.peek(cls.kind) is not cls:
        raise ValueError(f"task kind {cls.kind!r} is already registered by "
                         f"{TASKS.peek(cls.kind).__name__}")
    TASKS.add(cls.kind, cls)
    return cls


def get_task(kind: str) -> type:
    """The task class registered under `kind`."""
    if kind not in TASKS:
        raise ValueError(f"task={kind!r} is unknown; choose one of {sorted(TASKS)}")
    return TASKS[kind]


def build_task(record: Mapping[str, Any]) -> Task:
    """The task a run record's {"kind": ..., **fields} describes."""
    fields = dict(record)
    if "kind" not in fields:
        raise ValueError(f"a task record needs its 'kind' (one of {sorted(TASKS)}); got keys "
                         f"{sorted(fields)}")
    return get_task(fields.pop("kind"))(**fields)
