"""Mainali's exact objective against Gaussian quadrature of the task's own sampled loss: an exact
reference written another way, not a Monte Carlo.

At small sizes the sampled loss ½‖ŷ − y_q‖² of a sequence is a polynomial of degree ≤ 6 in the
standard-normal entries of its whitened inputs x̄ (the model's prediction is cubic in the tokens)
and, with fresh tasks, of degree ≤ 8 in its task's λ. A tensor Gauss–Hermite rule with 4 nodes per
coordinate (exact to degree 7) over x̄, and 5 per λ coordinate (degree 9), gives the expectation
to rounding; autograd of it gives the gradient. A fixed task set is averaged exactly. The batch
is the task's own (`WishartTasks._draw`, with the quadrature nodes as its normal draws), the
loss the task's own (`task.loss`, per node).

The Monte Carlo of tests/population/test_truth.py cannot see a term that moves the loss by less
than its Bonferroni bound (≈ 5 standard errors): a coefficient 2 → 2.2 inside the objective's
fourth-moment term moved the loss by ≤ 2.7 and the gradient by ≤ 4.7 standard errors at its
states and passed. Here the same bug is off by orders of magnitude more than rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .quadrature import hermite_rule, normal_draws
from .states import draw_states, in_flat_order

PAIR = ("wishart_tasks", "linear_transformer")
#: Gauss–Hermite nodes per coordinate: x̄ (degree ≤ 6) and fresh λ (degree ≤ 8)
NODES_X, NODES_LAMBDA = 4, 5
#: at most this many quadrature nodes per state (the coordinates: (N + 1)·d, plus d fresh λ)
MAX_NODES = 4**8
RTOL = 1e-9


def _small_states(rng) -> list:
    """States of the pair whose quadrature has at most MAX_NODES nodes, one with fresh tasks and
    one with a fixed task set (`draw_states` covers the reduced and the full model across them)."""
    found = {}
    for _ in range(500):
        for state in draw_states(PAIR, rng, n_states=1):
            t = state.task
            fresh = t.task_eigs is None
            size = NODES_X ** ((t.context + 1) * t.dim) * (NODES_LAMBDA ** t.dim if fresh else 1)
            if size <= MAX_NODES:
                found.setdefault(fresh, state)
        if len(found) == 2:
            return list(found.values())
    pytest.fail(f"no small state of {PAIR} with fresh and with fixed tasks in 500 draws")


def _expected_loss(state, monkeypatch) -> torch.Tensor:
    """E ½‖ŷ − y_q‖² by quadrature: nodes in place of the task's normal draws."""
    task, model = state.task, state.model
    n, d = task.context, task.dim
    xs, wx = hermite_rule(NODES_X, (n + 1) * d)
    if task.task_eigs is None:
        lam, wl = hermite_rule(NODES_LAMBDA, d)
    else:
        lam = torch.as_tensor(task.task_eigs)
        wl = torch.full((lam.shape[0],), 1.0 / lam.shape[0], dtype=torch.float64)
    eigs = lam.repeat_interleave(len(xs), 0)                          # [K·M, d]
    weights = (wl[:, None] * wx[None, :]).reshape(-1)                 # [K·M]
    draws = xs.repeat(len(lam), 1).reshape(-1, n + 1, d)              # [K·M, N+1, d]

    normal_draws(monkeypatch, [draws])
    batch = task._draw(eigs, None, torch.float64, "cpu")
    monkeypatch.undo()
    r = model(batch.x, batch.y, batch.x_q) - batch.y_q
    per_sequence = 0.5 * (r * r).sum(-1)
    # the task's loss is this per-sequence loss, averaged
    torch.testing.assert_close(task.loss(model, batch), per_sequence.mean(), rtol=1e-12, atol=0)
    return (weights * per_sequence).sum()


def test_exact_loss_and_gradient_equal_gaussian_quadrature_of_the_sampled_loss(rng, monkeypatch):
    for state in _small_states(rng):
        params = [p for p in state.model.parameters() if p.requires_grad]
        expected = _expected_loss(state, monkeypatch)
        grads = torch.autograd.grad(expected, params)
        lookup = {id(p): g for p, g in zip(params, grads, strict=True)}
        grad = in_flat_order(state.model, lambda p, g=lookup: g.get(id(p), torch.zeros_like(p)))
        loss, exact_grad = state.objective.loss_grad(state.params)
        assert loss == pytest.approx(float(expected.detach()), rel=RTOL), str(state)
        trainable = state.trainable
        scale = np.abs(grad[trainable]).max()
        np.testing.assert_allclose(exact_grad[trainable], grad[trainable], rtol=0,
                                   atol=RTOL * scale, err_msg=str(state))
