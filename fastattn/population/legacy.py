"""The positional `dims` tuples the population API took before it took model configs (deprecated
in 0.1; removed in 0.3.0, docs/conventions.md "Names"): one converter for every family.

A tuple's slots were the config's positional fields in order: (dim, heads, rank) for separate,
(dim, heads) for merged and cubic_mlp (a third slot, R, was ignored), (dim, heads, context) for
diag; the config class says which, so no family states its slots here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from fastattn._names import deprecated

#: the longest tuple the old API took: (D, H, R) or (d, H, T_max)
_OLD_SLOTS = 3


def config_of(kind: str, config: Any, new_call: str) -> Any:
    """`config` itself (anything with a `kind`), or for a positional dims tuple the config of
    model `kind` it described (after one deprecation line naming `new_call` with that config)."""
    if hasattr(config, "kind"):
        return config
    from fastattn.models import get_model

    cls = get_model(kind).config
    slots = [f.name for f in dataclasses.fields(cls) if f.init and not f.kw_only]
    fix = f"pass the model config ({cls.__name__}) instead of dims"
    try:
        values = [int(x) for x in config]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"dims={config!r} must be ({', '.join(slots)}) of ints; {fix}") from exc
    if not len(slots) <= len(values) <= _OLD_SLOTS:
        raise ValueError(f"dims={config!r} must be ({', '.join(slots)}) for {kind}; {fix}")
    given = dict(zip(slots, values, strict=False))
    try:
        out = cls(**given)
    except ValueError as exc:
        raise ValueError(f"dims={config!r}: {exc}; {fix}") from exc
    named = f"{cls.__name__}({', '.join(f'{k}={v}' for k, v in given.items())})"
    # the line names the user's call: deprecated ← config_of ← the API function ← its caller
    deprecated(f"the positional dims={tuple(values)}", new_call.replace("config", named),
               stacklevel=4)
    return out


def family_first(dims_at: int) -> Callable[[Callable], Callable]:
    """Let a function of the linear families, `f(config, ...)`, also take the old form
    `f(family, ..., dims, ...)` (dims at position `dims_at` or by keyword) for one deprecation
    period."""
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def call(config, *args, **kwargs):
            if isinstance(config, str):
                from fastattn.population.reference import check_family

                check_family(config)
                args = list(args)
                dims = kwargs.pop("dims") if "dims" in kwargs else args.pop(dims_at - 1)
                config = config_of(config, dims, f"{fn.__name__}(config, ...)")
            return fn(config, *args, **kwargs)
        return call
    return wrap
