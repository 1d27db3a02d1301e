"""The exact population objectives by (task kind, model kind): the one place that knows which pairs
have a closed form, and for which of their configurations. A factory takes the task and the model
and returns an `Objective`; its registration declares `exact_for(task, model config)`: why the
objective does not cover that configuration, or None where it does. The modules that register
them are those the papers' manifests list under `objectives` (`fastattn.papers`), imported on
the first lookup."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastattn import papers

ObjectiveFactory = Callable[[Any, Any], Any]
#: (task, model config) -> the reason the objective does not cover them, or None
ExactFor = Callable[[Any, Any], "str | None"]

#: the sampled methods a configuration without an exact objective trains with
SAMPLED = "train it with a sampled method (--method sgd or adam)"


@dataclass(frozen=True)
class Registration:
    """An exact objective of one (task kind, model kind): its factory and its declared coverage."""

    factory: ObjectiveFactory
    exact_for: ExactFor


_FACTORIES: papers.Registry = papers.Registry("objectives")


def register_objective(task_kind: str, model_kind: str, *, exact_for: ExactFor
                       ) -> Callable[[ObjectiveFactory], ObjectiveFactory]:
    """Decorator: `factory(task, model) -> Objective` is the exact objective of (task_kind,
    model_kind) for the configurations where `exact_for(task, model config)` is None (elsewhere it
    returns the reason, one line naming the field and the value the closed form needs)."""

    def register(factory: ObjectiveFactory) -> ObjectiveFactory:
        key = (task_kind, model_kind)
        if _FACTORIES.has(key) and _FACTORIES.peek(key).factory is not factory:
            raise ValueError(f"an objective for (task kind {task_kind!r}, model kind {model_kind!r}) "
                             f"is already registered: {_FACTORIES.peek(key).factory.__qualname__}")
        _FACTORIES.add(key, Registration(factory, exact_for))
        return factory

    return register


def registered_objectives() -> tuple[tuple[str, str], ...]:
    """The (task kind, model kind) pairs with an exact objective, sorted."""
    return tuple(sorted(_FACTORIES))


def _kinds(task, model) -> tuple[str, str]:
    kinds = []
    for what, obj in (("task", task), ("model", model)):
        kind = getattr(obj, "kind", None)
        if not isinstance(kind, str):
            raise ValueError(f"the {what} {type(obj).__name__} has no .kind naming its family")
        kinds.append(kind)
    return kinds[0], kinds[1]


def exact_reason(task, model) -> str | None:
    """Why `model` trained on `task` has no exact population objective, or None when one covers
    them. `task`: a task; `model`: a model or its config (its declared `exact_for` reads the
    config)."""
    kinds = _kinds(task, model)
    registration = _FACTORIES.get(kinds)
    if registration is None:
        pairs = ", ".join(f"({t}, {m})" for t, m in registered_objectives())
        return (f"no exact population objective for task kind {kinds[0]!r} with model kind "
                f"{kinds[1]!r} (register one with @register_objective; registered pairs: {pairs})")
    return registration.exact_for(task, getattr(model, "config", model))


def objective_for(task, model):
    """The exact population objective of `model` trained on `task` (both carry a `.kind`); a
    ValueError in one line, with the reason and the sampled methods, where none covers them."""
    reason = exact_reason(task, model)
    if reason is not None:
        raise ValueError(f"{reason}; {SAMPLED}")
    return _FACTORIES[_kinds(task, model)].factory(task, model)
