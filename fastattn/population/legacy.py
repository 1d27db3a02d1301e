"""The positional `dims` tuples the population API took before it took model configs (deprecated
in 0.1; removed in 0.3.0, docs/conventions.md "Names"): one converter for every family.

An old tuple's slots were (dim, heads, rank) for the linear attention families (merged and
cubic_mlp ignored the rank) and (dim, heads, context) for DIAG; the converter keeps the slots the
family's card knows (its fields, dim, and the fields it takes from the task) and returns a
stand-in config with those fields by name, which the objectives read as they read a model config.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from fastattn import _validate as check
from fastattn._names import deprecated

#: the slots of the old tuples: the linear attention families' (D, H, R), DIAG's (d, H, T_max)
LINEAR_SLOTS = ("dim", "heads", "rank")
DIAG_SLOTS = ("dim", "heads", "context")


def config_of(kind: str, config: Any, slots: tuple[str, ...], new_call: str) -> Any:
    """`config` itself (anything with a `kind`), or for an old positional tuple with `slots` a
    stand-in config of model `kind` with those fields (after one deprecation line naming
    `new_call`)."""
    if hasattr(config, "kind"):
        return config
    from fastattn.configs import MODEL_CARDS

    if kind not in MODEL_CARDS:
        raise ValueError(f"family={kind!r} is unknown; pass the model's config (model.config)")
    card = MODEL_CARDS[kind]
    known = [s for s in slots if s == "dim" or s in card.from_task
             or s in {f.name for f in card.fields}]
    fix = f"pass the {kind} model's config instead of dims"
    try:
        values = tuple(int(x) for x in config)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"dims={config!r} must be ({', '.join(known)}) of ints; {fix}") from exc
    if not len(known) <= len(values) <= len(slots):
        raise ValueError(f"dims={config!r} must be ({', '.join(known)}) for {kind}; {fix}")
    given = dict(zip(known, values, strict=False))
    for name, value in given.items():
        try:
            check.positive_int(name, value)
        except ValueError as exc:
            raise ValueError(f"dims={values}: {exc}; {fix}") from exc
    named = ", ".join(f"{k}={v}" for k, v in given.items())
    # the line names the user's call: deprecated ← config_of ← the API function ← its caller
    deprecated(f"the positional dims={values}",
               f"{new_call} with the {kind} model's config ({named}), e.g. model.config",
               stacklevel=4)
    return SimpleNamespace(kind=kind, **given)


def family_first(dims_at: int) -> Callable[[Callable], Callable]:
    """Let a function of the linear attention families, `f(config, ...)`, also take the old form
    `f(family, ..., dims, ...)` (dims at position `dims_at` or by keyword) for one deprecation
    period."""
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def call(config, *args, **kwargs):
            if isinstance(config, str):
                args = list(args)
                dims = kwargs.pop("dims") if "dims" in kwargs else args.pop(dims_at - 1)
                config = config_of(config, dims, LINEAR_SLOTS, f"{fn.__name__}(config, ...)")
            return fn(config, *args, **kwargs)
        return call
    return wrap
