"""Every registered exact population objective against independent truth: a Monte Carlo of the
task's own sampled loss, `task.loss(model, task.sample(...))`, with the model loaded from the same
flat parameters (its own `load_flat` / `to_flat`, the one flat mapping).

Generic over the registry (`registered_objectives()`): a new (task, model) pair gets these tests by
registering; the pair is built from its cards (`fastattn.configs`), so no list of pairs lives here.
Each pair is tested at states away from its paper preset: small non-default values of every integer
field of its task and model cards (dim, context / T_max, heads, rank, tasks, ...), random choices
of their boolean and choice fields (covering both values where the objective exists for both),
random seeds, perturbed float fields, and random parameters in every trainable block (blocks the
default init zeroes included). A state the objective refuses is projected by its `project` method
(the full disentangled model's exact subspace); frozen parameters keep the model's values.

The verdict is a z-test with the standard errors of the Monte Carlo: the N_BATCHES batch means of
the loss and of its autograd gradient are i.i.d., so (exact − mean)/se follows Student's t with
N_BATCHES − 1 degrees of freedom. The bound `z_bound` is Bonferroni's over the P + 1 comparisons of
one state at family-wise level ALPHA: a correct objective fails one state with probability ≤ ALPHA.
Components with no sampling spread (the induction loss on orthonormal data is the same for every
sequence) are held to float64 rounding instead (ROUNDING).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from scipy import stats

from fastattn.configs import model_card, resolve, task_card
from fastattn.configs.base import boolean, context_value, int_or_fresh
from fastattn.configs.build import build_task, model_config
from fastattn.models import build_model
from fastattn.population import objective_for, registered_objectives

#: family-wise false-alarm probability of one state's P + 1 z-tests for a correct objective
ALPHA = 1e-4
#: batch means per Monte Carlo (t-distribution with N_BATCHES − 1 degrees of freedom)
N_BATCHES = 48
#: sampled numbers per batch (task.sequence_size each sequence): the fast test's; the slow one's 4×
NUMBERS = 2**16
#: relative float64 tolerance where the sampled loss or gradient has no spread at all
ROUNDING = 1e-9
#: small values every integer field is drawn from (the presets use 8 to 64)
SMALL_INTS = (1, 2, 3, 4)
#: fields set, not drawn: the Monte Carlo runs in float64 like the objective
FIXED = {"dtype": "float64"}

PAIRS = registered_objectives()


def z_bound(n_tests: int, n_batches: int = N_BATCHES) -> float:
    """Two-sided Student-t quantile at ALPHA / n_tests (Bonferroni)."""
    return float(stats.t.isf(ALPHA / (2 * n_tests), df=n_batches - 1))


# ------------------------------------------------------------------------------ states
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
    if isinstance(preset, str) and "," in preset:        # an explicit list (a spectrum): length dim
        return ",".join(f"{v:.3f}" for v in rng.uniform(0.3, 2.0, dim))
    return preset


@functools.cache
def _preset(task_kind: str, model_kind: str):
    return resolve(task_kind, model_kind)


def _draw_values(task_kind: str, model_kind: str, rng) -> dict[str, dict[str, Any]]:
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


def _non_default(task_kind: str, model_kind: str, values) -> int:
    """How many integer fields differ from the pair's preset."""
    base = _preset(task_kind, model_kind)
    n = 0
    for target, card, preset in (("task", task_card(task_kind), base.task),
                                 ("model", model_card(model_kind), base.model)):
        n += sum(1 for f in card.fields if _is_int(f) and not f.name.endswith("seed")
                 and f.name in values[target] and values[target][f.name] != preset.get(f.name))
    return n


def _in_flat_order(model, value) -> np.ndarray:
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
                tries: int = 5000, scale: float = 0.5) -> list[State]:
    """`n_states` distinct configurations of `pair` where its objective exists: the first with the
    most non-default integer fields, the next each covering the most (field, value) choices the
    earlier ones did not; each with random parameters N(0, scale²) in every trainable block."""
    task_kind, model_kind = pair
    pool = []
    for _ in range(tries):
        values = _draw_values(task_kind, model_kind, rng)
        built = _build(task_kind, model_kind, values)
        if built is not None:
            pool.append((values, built))
        if len(pool) >= 12:
            break
    assert len(pool) >= n_states, f"{pair}: only {len(pool)} of {tries} random configurations have " \
                                  "an exact objective; widen SMALL_INTS or the choices"

    cards = {"task": task_card(task_kind), "model": model_card(model_kind)}
    options = {(t, f.name) for t, card in cards.items() for f in card.fields
               if (f.choices or f.parse is boolean) and f.name not in FIXED}

    def choices(values) -> set:
        return {(t, k, values[t].get(k)) for t, k in options}

    picked, covered = [], set()
    for _ in range(n_states):
        best = max((c for c in pool if c not in picked),
                   key=lambda c: (len(choices(c[0]) - covered),
                                  _non_default(task_kind, model_kind, c[0])))
        picked.append(best)
        covered |= choices(best[0])
    states = []
    for values, (task, model, objective) in picked:
        trainable = _in_flat_order(model, lambda p: torch.full_like(p, float(p.requires_grad))) > 0
        params = np.where(trainable, scale * rng.standard_normal(model.flat_size()), model.to_flat())
        project = getattr(objective, "project", None)
        if project is not None:
            params = np.where(trainable, project(params), params)
        model.load_flat(params)
        states.append(State(task, model, objective, params, trainable, values))
    return states


def monte_carlo(state: State, n_batches: int, batch_size: int):
    """Batch means of the sampled loss and of its autograd gradient (flat order): (loss mean,
    loss se, grad mean [P], grad se [P]) over n_batches independent batches of the task."""
    model, task = state.model, state.task
    params = [p for p in model.parameters() if p.requires_grad]
    losses, grads = [], {id(p): [] for p in params}
    for step in range(n_batches):
        batch = task.sample(batch_size, step)
        loss = task.loss(model, batch)
        for p, g in zip(params, torch.autograd.grad(loss, params), strict=True):
            grads[id(p)].append(g)
        losses.append(float(loss.detach()))
    per = {k: torch.stack(v) for k, v in grads.items()}
    mean = _in_flat_order(model, lambda p: per[id(p)].mean(0) if id(p) in per else torch.zeros_like(p))
    se = _in_flat_order(model, lambda p: per[id(p)].std(0) / math.sqrt(n_batches) if id(p) in per
                        else torch.zeros_like(p))
    losses = np.array(losses)
    return losses.mean(), losses.std(ddof=1) / math.sqrt(n_batches), mean, se


def assert_matches_monte_carlo(state: State, numbers: int = NUMBERS, n_batches: int = N_BATCHES) -> None:
    """The z-test of the module docstring, batches of about `numbers` sampled numbers (≥ 64
    sequences)."""
    L, g = state.objective.loss_grad(state.params)
    batch_size = max(64, numbers // max(1, state.task.sequence_size))
    mc_L, se_L, mc_g, se_g = monte_carlo(state, n_batches, batch_size)
    keep = state.trainable
    z = z_bound(1 + int(keep.sum()), n_batches)
    tol_L = z * se_L + ROUNDING * max(1.0, abs(L))
    assert abs(L - mc_L) <= tol_L, (
        f"{state}: exact loss {L:.6g}, Monte Carlo {mc_L:.6g} ± {se_L:.3g} (z = "
        f"{abs(L - mc_L) / max(se_L, 1e-300):.2f} > {z:.2f})")
    scale = max(1.0, float(np.max(np.abs(g[keep]))))
    tol_g = z * se_g[keep] + ROUNDING * scale
    bad = np.abs(g[keep] - mc_g[keep]) > tol_g
    worst = int(np.argmax(np.abs(g[keep] - mc_g[keep]) / tol_g))
    assert not bad.any(), (
        f"{state}: {int(bad.sum())} of {int(keep.sum())} gradient components off the Monte Carlo "
        f"by more than {z:.2f} standard errors; worst: exact {g[keep][worst]:.6g}, Monte Carlo "
        f"{mc_g[keep][worst]:.6g} ± {se_g[keep][worst]:.3g}")


def _pair_id(pair) -> str:
    return f"{pair[0]}/{pair[1]}"


# ------------------------------------------------------------------------------ the tests
@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_exact_loss_and_gradient_equal_the_sampled_monte_carlo(pair, rng):
    """The exact loss and gradient at two drawn states equal the mean of the task's sampled loss and
    of its autograd gradient through the torch model (the sampled training path), within z_bound
    standard errors."""
    for state in draw_states(pair, rng):
        print(state)
        assert_matches_monte_carlo(state)


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_exact_objective_at_more_states_with_more_samples(pair, rng):
    """As above at three states and four times the sequences (standard errors halved)."""
    for state in draw_states(pair, rng, n_states=3):
        print(state)
        assert_matches_monte_carlo(state, numbers=4 * NUMBERS)


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_hessian_products_are_differences_of_the_gradient(pair, rng):
    """At the drawn states: H u equals the central difference of the exact gradient along u (the
    gradient itself is checked against the Monte Carlo above)."""
    for state in draw_states(pair, rng):
        obj, th = state.objective, state.params
        if not obj.has_hessian_operator:
            continue
        for _ in range(2):
            u = rng.standard_normal(th.size)
            project = getattr(obj, "project", None)
            if project is not None:
                u = project(u)
            h = 1e-5 * max(1.0, float(np.linalg.norm(th))) / max(1.0, float(np.linalg.norm(u)))
            diff = (obj.loss_grad(th + h * u)[1] - obj.loss_grad(th - h * u)[1]) / (2 * h)
            Hu = obj.hvp(th, u)
            scale = max(1.0, float(np.max(np.abs(Hu))))
            np.testing.assert_allclose(Hu, diff, rtol=0, atol=1e-5 * scale, err_msg=str(state))


def test_states_differ_from_the_presets(rng):
    """The drawn states are away from the defaults: every pair gets a state with a non-default
    integer field, and non-zero parameters in every trainable coordinate."""
    for pair in PAIRS:
        states = draw_states(pair, rng)
        assert max(_non_default(*pair, s.values) for s in states) >= 1, pair
        for s in states:
            assert np.all(s.params[s.trainable] != 0) or getattr(s.objective, "project", None), pair
        assert len({repr(sorted(itertools.chain(*(v.items() for v in s.values.values()))))
                    for s in states}) == len(states)
