"""Random states of every registered (task, model) pair with an exact objective, drawn from the
pairs' cards (`fastattn.configs`): no list of pairs lives in the tests, so a new registration is
tested by registering (tests/population/test_truth.py, test_objective_suite.py).

A state is the pair away from its paper preset: small non-default values of every integer field of
its task and model cards (dim, context / T_max, heads, rank, tasks, ...), random choices of their
boolean and choice fields (covering both values across states where the objective exists for both),
random seeds, perturbed float fields (unset ones set half the time: a task mean, a prior variance),
and random parameters in every trainable block (blocks the default init zeroes included). A state
the objective refuses is projected by its `project` method (the full disentangled model's exact
subspace); frozen parameters keep the model's values.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fastattn.configs import model_card, resolve, task_card
from fastattn.configs.base import boolean, context_value, floats, int_or_fresh
from fastattn.models import build_model
from fastattn.population import objective_for
from fastattn.training.build import build_task, model_config

#: small values every integer field is drawn from (the presets use 8 to 64)
SMALL_INTS = (1, 2, 3, 4)
#: fields set, not drawn: the Monte Carlo runs in float64 like the objective
FIXED = {"dtype": "float64"}


@dataclass
class State:
    """One (task, model, objective) of a pair at a drawn configuration, the model holding `params`."""

    task: Any
    model: Any
    objective: Any
    params: np.ndarray
    trainable: np.ndarray      # bool [P]: the coordinates the model trains (requires_grad)
    values: dict[str, dict[str, Any]]

    def __str__(self) -> str:
        shown = {t: {k: v for k, v in vals.items() if not k.endswith("seed")}
                 for t, vals in self.values.items() if t != "train"}
        return f"{type(self.objective).__name__} at {shown}"


def _is_int(f) -> bool:
    return f.parse in (int, context_value, int_or_fresh)


def _draw_value(f, preset: Any, dim: int, rng: np.random.Generator) -> Any:
    """A random value of card field `f` (preset value `preset`, token dim `dim`)."""
    if f.name.endswith("seed"):
        return int(rng.integers(1, 10_000))
    if f.choices:
        return f.choices[rng.integers(len(f.choices))]
    if f.parse is boolean:
        return bool(rng.integers(2))
    if _is_int(f) and isinstance(preset, int):
        pool = SMALL_INTS + (("fresh",) if f.parse is int_or_fresh else ())
        return pool[rng.integers(len(pool))]
    if f.parse is float and isinstance(preset, int | float):
        return float(preset * rng.uniform(0.5, 1.5) if preset else rng.uniform(0.1, 0.5))
    if preset is None and f.parse in (float, floats) and rng.integers(2):    # an unset option, set
        if f.parse is float:
            return float(rng.uniform(0.1, 0.9))
        return [float(v) for v in rng.standard_normal(dim)]
    if isinstance(preset, tuple | list) and preset and all(isinstance(g, tuple | list) for g in preset):
        # groups of coordinates (He's task supports): 1–4 groups of distinct coordinates below dim
        return tuple(tuple(sorted(rng.choice(dim, int(rng.integers(1, dim + 1)), replace=False).tolist()))
                     for _ in range(int(rng.integers(1, 5))))
    if isinstance(preset, str) and "," in preset:        # an explicit list (a spectrum): length dim
        return ",".join(f"{v:.3f}" for v in rng.uniform(0.3, 2.0, dim))
    return preset


@functools.cache
def _preset(task_kind: str, model_kind: str):
    return resolve(task_kind, model_kind)


def draw_values(task_kind: str, model_kind: str, rng) -> dict[str, dict[str, Any]]:
    """The pair's preset values with every card field redrawn (`_draw_value`), FIXED set."""
    base = _preset(task_kind, model_kind)
    out: dict[str, dict[str, Any]] = {"task": dict(base.task), "model": dict(base.model)}
    for target, card in (("task", task_card(task_kind)), ("model", model_card(model_kind))):
        for f in card.fields:
            value = FIXED.get(f.name) or _draw_value(f, out[target].get(f.name),
                                                     out["task"].get("dim", 1), rng)
            if value is not None:
                out[target][f.name] = value
    return out


def non_default(task_kind: str, model_kind: str, values) -> int:
    """How many integer fields differ from the pair's preset."""
    base = _preset(task_kind, model_kind)
    n = 0
    for target, card, preset in (("task", task_card(task_kind), base.task),
                                 ("model", model_card(model_kind), base.model)):
        n += sum(1 for f in card.fields if _is_int(f) and not f.name.endswith("seed")
                 and f.name in values[target] and values[target][f.name] != preset.get(f.name))
    return n


def in_flat_order(model, value) -> np.ndarray:
    """`value(p)` (a tensor of p's shape) for every parameter p, flattened in the model's own flat
    order: written into the parameters and read back with `to_flat` (no second mapping)."""
    saved = model.to_flat()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(value(p))
    out = model.to_flat()
    model.load_flat(saved)
    return out


def _build(task_kind: str, model_kind: str, values) -> tuple[Any, Any, Any] | None:
    """(task, model, objective) of the drawn values, or None where the pair has no exact objective
    there (a value the task, the model or the objective refuses)."""
    try:
        task = build_task(values["task"])
        model = build_model(model_config(values["model"], task))
        return task, model, objective_for(task, model)
    except ValueError:
        return None


def draw_states(pair: tuple[str, str], rng: np.random.Generator, n_states: int = 2,
                tries: int = 5000, scale: float = 0.5, accept=None) -> list[State]:
    """`n_states` distinct configurations of `pair` where its objective exists (and, if given,
    `accept(task)` holds): the first with the most non-default integer fields, the next each
    covering the most (field, value) choices the earlier ones did not; each with random
    parameters N(0, scale²) in every trainable block."""
    task_kind, model_kind = pair
    pool = []
    for _ in range(tries):
        values = draw_values(task_kind, model_kind, rng)
        built = _build(task_kind, model_kind, values)
        if built is not None and (accept is None or accept(built[0])):
            pool.append((values, built))
        if len(pool) >= 12:
            break
    assert len(pool) >= n_states, f"{pair}: only {len(pool)} of {tries} random configurations have " \
                                  "an exact objective; widen SMALL_INTS or the choices"

    cards = {"task": task_card(task_kind), "model": model_card(model_kind)}
    base = _preset(task_kind, model_kind)
    options = {(t, f.name) for t, card in cards.items() for f in card.fields
               if (f.choices or f.parse is boolean) and f.name not in FIXED}
    unset = {(t, f.name) for t, card in cards.items() for f in card.fields     # set or not
             if f.parse in (float, floats) and getattr(base, t).get(f.name) is None}

    def choices(values) -> set:
        return ({(t, k, values[t].get(k)) for t, k in options}
                | {(t, k, values[t].get(k) is None) for t, k in unset})

    picked, covered = [], set()
    for _ in range(n_states):
        best = max((c for c in pool if c not in picked),
                   key=lambda c: (len(choices(c[0]) - covered),
                                  non_default(task_kind, model_kind, c[0])))
        picked.append(best)
        covered |= choices(best[0])
    states = []
    for values, (task, model, objective) in picked:
        trainable = in_flat_order(model, lambda p: torch.full_like(p, float(p.requires_grad))) > 0
        params = np.where(trainable, scale * rng.standard_normal(model.flat_size()), model.to_flat())
        project = getattr(objective, "project", None)
        if project is not None:
            params = np.where(trainable, project(params), params)
        model.load_flat(params)
        states.append(State(task, model, objective, params, trainable, values))
    return states
