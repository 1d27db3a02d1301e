"""The C++ linear attention objectives (merged, separate, cubic_mlp on linear regression) against
Gaussian quadrature of the task's own sampled loss: an exact reference written another way, not
a Monte Carlo.

The sampled loss (y_q − ŷ_q)² of a sequence is a polynomial of degree ≤ 8 in the standard normal
draws of its tokens x, its task vector w and its noise ε (ŷ_q = Σ_i y_i x_iᵀ Γ x_q / N with
y_i = wᵀx_i + ε_i). A tensor Gauss–Hermite rule with 5 nodes per coordinate (exact to degree 9)
gives its expectation to rounding at small sizes, and autograd its gradient. The batch is the
task's own (`LinearRegression._draw` with the quadrature nodes as its normal draws), the loss the
task's own. Generic over the registry: every registered linear-regression objective, at random
states away from its preset (tests/population/states.py) small enough for the rule.

test_truth.py's Monte Carlo passes any term that moves the loss by less than ≈ 5 standard errors;
here a change of 1e-6 of the loss is seen.
"""

from __future__ import annotations

import pytest
import torch

from fastattn.population import registered_objectives

from .quadrature import hermite_rule, normal_draws
from .states import draw_states, in_flat_order

PAIRS = [p for p in registered_objectives() if p[0] == "linear_regression"]
NODES = 5
#: at most 9 coordinates: (N + 1)·D token entries, D of w, N + 1 noises
MAX_COORDS = 9
RTOL = 1e-9


def _coords(task) -> int:
    return (task.max_context + 1) * task.dim + task.dim + task.max_context + 1


def _small(task) -> bool:
    """At most MAX_COORDS coordinates and one context length."""
    return _coords(task) <= MAX_COORDS and len(task.context_lengths) == 1


def _expected_loss(state, monkeypatch) -> torch.Tensor:
    """E (y_q − ŷ_q)² by quadrature: nodes in place of the task's normal draws (x, w, ε); with a
    fixed-task fraction f, (1 − f) × the loss of fresh tasks + f × the loss of the fixed one (the
    task's uniform draw < f picks it)."""
    task, model = state.task, state.model
    n, d = task.max_context, task.dim
    nodes, weights = hermite_rule(NODES, _coords(task))
    m = len(nodes)
    x, w, eps = torch.split(nodes, [(n + 1) * d, d, n + 1], dim=1)
    f = float(task.fixed_task_fraction)
    total = torch.zeros((), dtype=torch.float64)
    for uniform, share in ((1.0, 1 - f), (0.0, f)):
        if share == 0:
            continue
        normal_draws(monkeypatch, [x.reshape(m, n + 1, d), w, eps])
        monkeypatch.setattr(torch, "rand", lambda *shape, u=uniform, **kw: torch.full(
            shape, u, dtype=torch.float64))
        batch = task._draw(m, None, torch.float64, "cpu", exact_fraction=False)
        monkeypatch.undo()
        per_sequence = (batch.y_q - model(batch.x, batch.y, batch.x_q, lengths=batch.lengths)) ** 2
        torch.testing.assert_close(task.loss(model, batch), per_sequence.mean(), rtol=1e-12,
                                   atol=0)
        total = total + share * (weights * per_sequence).sum()
    return total


@pytest.mark.parametrize("pair", PAIRS, ids="/".join)
def test_exact_loss_and_gradient_equal_gaussian_quadrature_of_the_sampled_loss(
        pair, rng, monkeypatch):
    for state in draw_states(pair, rng, accept=_small):
        params = [p for p in state.model.parameters() if p.requires_grad]
        expected = _expected_loss(state, monkeypatch)
        lookup = {id(p): g for p, g in zip(params, torch.autograd.grad(expected, params),
                                           strict=True)}
        grad = in_flat_order(state.model, lambda p, g=lookup: g.get(id(p), torch.zeros_like(p)))
        loss, exact_grad = state.objective.loss_grad(state.params)
        assert loss == pytest.approx(float(expected.detach()), rel=RTOL), str(state)
        t = state.trainable
        scale = abs(grad[t]).max()
        assert abs(exact_grad[t] - grad[t]).max() <= RTOL * scale, str(state)
