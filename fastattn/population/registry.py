"""The exact population objectives by (task kind, model kind): the one place that knows which pairs
have a closed form. A factory takes the task and the model and returns an `Objective`. The modules
that register them are those the papers' manifests list under `objectives` (`fastattn.papers`),
imported on the first lookup."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastattn import papers

ObjectiveFactory = Callable[[Any, Any], Any]

_FACTORIES: papers.Registry = papers.Registry("objectives")


def register_objective(task_kind: str, model_kind: str) -> Callable[[ObjectiveFactory], ObjectiveFactory]:
    """Decorator: `factory(task, model) -> Objective` is the exact objective of (task_kind, model_kind)."""

    def register(factory: ObjectiveFactory) -> ObjectiveFactory:
        key = (task_kind, model_kind)
        if _FACTORIES.has(key) and _FACTORIES.peek(key) is not factory:
            raise ValueError(f"an objective for (task kind {task_kind!r}, model kind {model_kind!r}) "
                             f"is already registered: {_FACTORIES.peek(key).__qualname__}")
        _FACTORIES.add(key, factory)
        return factory

    return register


def registered_objectives() -> tuple[tuple[str, str], ...]:
    """The (task kind, model kind) pairs with an exact objective, sorted."""
    return tuple(sorted(_FACTORIES))


def objective_for(task, model):
    """The exact population objective of `model` trained on `task` (both carry a `.kind`)."""
    kinds = []
    for what, obj in (("task", task), ("model", model)):
        kind = getattr(obj, "kind", None)
        if not isinstance(kind, str):
            raise ValueError(f"the {what} {type(obj).__name__} has no .kind naming its family")
        kinds.append(kind)
    factory = _FACTORIES.get((kinds[0], kinds[1]))
    if factory is None:
        pairs = ", ".join(f"({t}, {m})" for t, m in registered_objectives())
        raise ValueError(f"no exact population objective for task kind {kinds[0]!r} with model kind "
                         f"{kinds[1]!r}: train it with a sampled method (sgd, adam), or register one "
                         f"with @register_objective; registered pairs: {pairs}")
    return factory(task, model)
