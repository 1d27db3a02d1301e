"""Each exact objective's declared coverage (`exact_for` of its registration) against independent
truth: at every value of every choice field of its pair's cards, set in a random configuration the
declaration covers, a configuration the declaration says is covered has an objective whose loss
and gradient equal the Monte Carlo of the task's own sampled loss (test_truth.py's z-test); one
it says is not covered is refused by `objective_for` in one line with the reason and the sampled
methods. A wrong claim of coverage (e.g. the sum-reduced induction loss claimed for the mean
reduction, or AUG-1's Prop. 2 for orthogonal contexts) fails the first."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastattn.configs import model_card, task_card
from fastattn.configs.base import boolean
from fastattn.models import build_model
from fastattn.population import objective_for, registered_objectives
from fastattn.population.registry import exact_reason
from fastattn.training.build import build_task, model_config

from .states import FIXED, State, draw_values, in_flat_order
from .test_truth import assert_matches_monte_carlo

#: fields whose values change no population loss (the init's scheme; float32 is fixed to float64)
NEUTRAL = ("init_scheme", "dtype")


def _choices(pair) -> list[tuple[str, str, object]]:
    out = []
    for target, card in (("task", task_card(pair[0])), ("model", model_card(pair[1]))):
        for f in card.fields:
            if (f.choices or f.parse is boolean) and f.name not in NEUTRAL and f.name not in FIXED:
                out += [(target, f.name, v) for v in (f.choices or (False, True))]
    return out


CASES = [(pair, *choice) for pair in registered_objectives() for choice in _choices(pair)]


def _build(values):
    task = build_task(values["task"])
    return task, build_model(model_config(values["model"], task))


def _built(pair, target: str, name: str, value, rng, tries: int = 500):
    """(task, model, values) of a random configuration of `pair` that its declaration covers, with
    `name` then set to `value` (so the declaration is asked about that one value); where the value
    builds in no such configuration (Haar contexts need real tokens), of any configuration with
    the value; None where none builds."""
    for covered in (True, False):
        for _ in range(tries):
            values = draw_values(*pair, rng)
            try:
                if covered and exact_reason(*_build(values)) is not None:
                    continue
                values[target][name] = value
                return *_build(values), values
            except ValueError:          # a value the task or the model refuses
                continue
    return None


@pytest.mark.parametrize(("pair", "target", "name", "value"), CASES,
                         ids=[f"{p[0]}/{p[1]}-{n}={v}" for p, _, n, v in CASES])
def test_declared_coverage_holds_against_the_monte_carlo(pair, target, name, value, rng):
    built = _built(pair, target, name, value, rng)
    if built is None:
        pytest.skip(f"no configuration of {pair} with {name}={value!r} builds")
    task, model, values = built
    reason = exact_reason(task, model)
    assert exact_reason(task, model.config) == reason          # a model or its config alike
    if reason is not None:
        with pytest.raises(ValueError) as err:
            objective_for(task, model)
        assert str(err.value) == f"{reason}; train it with a sampled method (--method sgd or adam)"
        assert "\n" not in str(err.value)
        return
    objective = objective_for(task, model)
    trainable = in_flat_order(model, lambda p: torch.full_like(p, float(p.requires_grad))) > 0
    params = np.where(trainable, 0.5 * rng.standard_normal(model.flat_size()), model.to_flat())
    project = getattr(objective, "project", None)
    if project is not None:
        params = np.where(trainable, project(params), params)
    model.load_flat(params)
    assert_matches_monte_carlo(State(task, model, objective, params, trainable, values),
                               numbers=2**14, n_batches=24)


def test_every_pair_has_a_covered_and_each_refusal_a_reason():
    """The registry answers for unregistered pairs too (one line naming the registered ones)."""
    from fastattn.tasks import LinearRegression

    task = LinearRegression(2, context=4)

    class Model:
        kind = "softmax_merged"

    reason = exact_reason(task, Model())
    assert reason.startswith("no exact population objective for task kind 'linear_regression' "
                             "with model kind 'softmax_merged'")
