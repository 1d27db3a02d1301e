"""Capabilities: the methods a model or a task may define that an engine or an option needs, each
named once, here, with what needs it; only `Capability.of` looks for one (no `hasattr` probes
elsewhere). A leaf module: `fastattn.info` reads them without importing the engines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Capability:
    """A method that a model or a task may define, which an engine or an option needs.

    Attributes:
        name: the method's name. owner: "model" or "task".
        need: who needs it and what it is, the start of the reason when it is missing.
    """

    name: str
    owner: str
    need: str

    def of(self, obj: Any) -> bool:
        """Whether `obj` (a model or task, or its class) defines the method."""
        return callable(getattr(obj, self.name, None))

    def missing(self, obj: Any) -> list[str]:
        """[the reason] when `obj` lacks the method, else []."""
        if self.of(obj):
            return []
        kind = getattr(obj, "kind", None)
        label = kind if isinstance(kind, str) else getattr(obj, "__name__", type(obj).__name__)
        return [f"{self.need}, which defines {self.name}: {self.owner} {label} does not"]


SNAPSHOT_SERIES = Capability("snapshot_series", "model", "snapshot_params=False keeps the model's "
                             "named series in place of the parameters")
FORWARD_STATS = Capability("forward_stats", "model", "sampler='stats' needs a linear model "
                           "(merged, separate, cubic_mlp) that predicts from (β, x_q)")
SAMPLE_STATS = Capability("sample_stats", "task", "sampler='stats' needs a task that draws only "
                          "(β, x_q, y_q)")
QUERY_LOSS_GRAD = Capability("query_loss_grad", "model", "method='task_sgd' needs the model's "
                             "matrix-free per-task gradient (linear_transformer)")
SAMPLE_TASK = Capability("sample_task", "task", "method='task_sgd' needs a task that draws "
                         "batches of one task μ (wishart_tasks)")
