"""Per-paper sweep hooks: the columns a paper's theory predicts for a run, the flow horizon it
gives, what it measures on a finished run, and its plots; found by the run's (task kind, model kind).

Why here and not in `fastattn/experiments/<paper>/`: the hooks are written against the sweep's
types (`Horizon`, the results table) and the sweep calls them, while the figure recipes never touch
sweeps; keeping them in `fastattn/sweep/hooks/` keeps every import one-way (sweep -> theory,
experiments -> theory). The theory itself stays in `fastattn/theory/<paper>.py`.
"""

from __future__ import annotations

from fastattn.sweep.hooks import he2025, mainali2025, musat2025, sander2024, zhang2025
from fastattn.sweep.hooks.base import Columns, Hooks

#: paper name -> its hooks
HOOKS: dict[str, Hooks] = {h.paper: h for h in (zhang2025.HOOKS, musat2025.HOOKS, mainali2025.HOOKS,
                                                  sander2024.HOOKS, he2025.HOOKS)}


def _by_pair() -> dict[tuple[str, str], Hooks]:
    out: dict[tuple[str, str], Hooks] = {}
    for hooks in HOOKS.values():
        for pair in hooks.pairs:
            if pair in out:
                raise ValueError(f"(task kind, model kind) {pair} has hooks of both {out[pair].paper} "
                                 f"and {hooks.paper}; one pair takes one paper's hooks")
            out[pair] = hooks
    return out


BY_PAIR = _by_pair()


def hooks_for(task_kind: str, model_kind: str) -> Hooks | None:
    """The hooks of the paper whose theory covers (task kind, model kind); None if none does."""
    return BY_PAIR.get((task_kind, model_kind))


def units() -> dict[str, str]:
    """Column -> unit of every paper's hooks (the results table's column metadata)."""
    out: dict[str, str] = {}
    for hooks in HOOKS.values():
        out |= hooks.units
    return out


def plot_kinds() -> dict[str, str]:
    """Plot kind -> "module:function" of every paper's sweep plots."""
    out: dict[str, str] = {}
    for hooks in HOOKS.values():
        clash = set(out) & set(hooks.plots)
        if clash:
            raise ValueError(f"sweep plot kinds {sorted(clash)} are defined twice ({hooks.paper})")
        out |= hooks.plots
    return out


__all__ = ["BY_PAIR", "HOOKS", "Columns", "Hooks", "hooks_for", "plot_kinds", "units"]
