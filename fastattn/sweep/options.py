"""Which options a run of one (task kind, model kind) has: the sweep's one adapter onto the family
cards (`fastattn.configs.options_for`)."""

from __future__ import annotations

from fastattn.configs import options_for


def family_options(task_kind: str, model_kind: str) -> tuple[str, ...]:
    """Option names (flags without dashes, e.g. "dim", "rank", "lr") that apply to a run of
    `task_kind` with `model_kind`: the task's options, the model's, and every trainer option, in
    declaration order. The results table's config columns of such a run are exactly these. Read
    from the cards when asked (a card registered or changed since is known)."""
    return tuple(o.name for o in options_for(task_kind, model_kind))
