"""Per-paper sweep hooks: the columns a paper's theory predicts for a run, the flow horizon it
gives, what it measures on a finished run, and its plots; found by the run's (task kind, model kind).
Each paper's manifest (`fastattn.papers`, field `hooks`) says where its hooks are.

Why here and not in `fastattn/experiments/<paper>/`: the hooks are written against the sweep's
types (`Horizon`, the results table) and the sweep calls them, while the figure recipes never touch
sweeps; keeping them in `fastattn/sweep/hooks/` keeps every import one-way (sweep -> theory,
experiments -> theory). The theory itself stays in `fastattn/theory/<paper>.py`.
"""

from __future__ import annotations

import numpy as np

from fastattn import papers
from fastattn.sweep.hooks.base import Columns, Hooks


def _hooks() -> dict[str, Hooks]:
    out: dict[str, Hooks] = {}
    for paper, hooks in papers.objects("hooks"):
        if hooks.paper != paper.name:
            raise ValueError(f"paper {paper.name}'s manifest points at the hooks of {hooks.paper}")
        out[paper.name] = hooks
    return out


#: paper name -> its hooks, in the papers' order (rebuilt when a paper is registered)
HOOKS: papers.View = papers.View(_hooks)


def _by_pair() -> dict[tuple[str, str], Hooks]:
    out: dict[tuple[str, str], Hooks] = {}
    for hooks in HOOKS.values():
        for pair in hooks.pairs:
            if pair in out:
                raise ValueError(f"(task kind, model kind) {pair} has hooks of both {out[pair].paper} "
                                 f"and {hooks.paper}; one pair takes one paper's hooks")
            out[pair] = hooks
    return out


#: (task kind, model kind) -> the hooks of the paper that covers it
BY_PAIR: papers.View = papers.View(_by_pair)


def hooks_for(task_kind: str, model_kind: str) -> Hooks | None:
    """The hooks of the paper whose theory covers (task kind, model kind); None if none does."""
    return BY_PAIR.get((task_kind, model_kind))


#: prediction columns that are loss values (in the run's own loss), and how a plot names them
LOSS_COLUMNS = {"theory_levels": "plateau levels", "theory_Lstar": "minimum L*",
                "theory_plateau_loss": "plateau", "theory_loss_inf_paper": "the paper's final loss"}


def loss_levels(task, model: dict, params0: np.ndarray | None = None) -> list[tuple[str, list[float]]]:
    """The loss levels the pair's theory predicts for a run (`task`, its model options `model`
    with "kind", initial flat parameters `params0` `[P]` or None), as (label, levels) for a loss
    plot: "theory (zhang2025): plateau levels", … Empty where no paper covers the pair or no
    formula applies (NaN)."""
    from fastattn.sweep.horizon import Horizon

    hooks = hooks_for(task.kind, model["kind"])
    if hooks is None:
        return []
    predicted = hooks.predictions(task, model, params0, Horizon())
    out = []
    for column, name in LOSS_COLUMNS.items():
        levels = np.atleast_1d(np.asarray(predicted.get(column) if predicted.get(column) is not None
                                          else np.nan, dtype=float))
        if column == "theory_Lstar" and "theory_levels" in predicted and predicted["theory_levels"]:
            continue            # L* is the last plateau level, drawn with them
        if np.isfinite(levels).any():
            out.append((f"theory ({hooks.paper}): {name}", [float(v) for v in levels[np.isfinite(levels)]]))
    return out


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


__all__ = ["BY_PAIR", "HOOKS", "LOSS_COLUMNS", "Columns", "Hooks", "hooks_for", "loss_levels",
           "plot_kinds", "units"]
