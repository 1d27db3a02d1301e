"""Which options a run of one (task kind, model kind) has: the sweep's one adapter onto the option
declarations (today `fastattn.cli_options.OPTIONS` and their `families`; at the configs API's
arrival, its options-per-(task, model) call replaces the body of `family_options`)."""

from __future__ import annotations

from functools import cache

from fastattn.cli_options import OPTIONS


@cache
def family_options(task_kind: str, model_kind: str) -> tuple[str, ...]:
    """Option names (flags without dashes, e.g. "dim", "rank", "lr") that apply to a run of
    `task_kind` with `model_kind`: the task's options, the model's, and every trainer option, in
    declaration order. The results table's config columns of such a run are exactly these."""
    chosen = {"task": task_kind, "model": model_kind}
    return tuple(o.name for o in OPTIONS
                 if not o.families or o.target == "train" or chosen[o.target] in o.families)
