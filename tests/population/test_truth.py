"""Every registered exact population objective against independent truth: a Monte Carlo of the
task's own sampled loss, `task.loss(model, task.sample(...))`, with the model loaded from the same
flat parameters (its own `load_flat` / `to_flat`, the one flat mapping).

Generic over the registry (`registered_objectives()`): a new (task, model) pair gets these tests by
registering. Each pair is tested at random states drawn from its cards away from its paper preset
(tests/population/states.py: non-default sizes, choices, seeds, every trainable block non-zero).

The verdict is a z-test with the standard errors of the Monte Carlo: the N_BATCHES batch means of
the loss and of its autograd gradient are i.i.d., so (exact − mean)/se follows Student's t with
N_BATCHES − 1 degrees of freedom. The bound `z_bound` is Bonferroni's over the P + 1 comparisons of
one state at family-wise level ALPHA: a correct objective fails one state with probability ≤ ALPHA.
Components with no sampling spread (the induction loss on orthonormal data is the same for every
sequence) are held to float64 rounding instead (ROUNDING).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from fastattn.population import registered_objectives
from helpers import mc_z_bound

from .states import State, draw_states, in_flat_order, non_default

#: family-wise false-alarm probability of one state's P + 1 z-tests for a correct objective
ALPHA = 1e-4
#: batch means per Monte Carlo (t-distribution with N_BATCHES − 1 degrees of freedom)
N_BATCHES = 48
#: sampled numbers per batch (task.sequence_size each sequence): the fast test's; the slow one's 4×
NUMBERS = 2**16
#: relative float64 tolerance where the sampled loss or gradient has no spread at all
ROUNDING = 1e-9

PAIRS = registered_objectives()


def z_bound(n_tests: int, n_batches: int = N_BATCHES) -> float:
    """Two-sided Student-t quantile at ALPHA / n_tests (Bonferroni)."""
    return mc_z_bound(n_tests, ALPHA, dof=n_batches - 1)


def monte_carlo(state: State, n_batches: int, batch_size: int, first_step: int = 0):
    """Batch means of the sampled loss and of its autograd gradient (flat order): (loss mean,
    loss se, grad mean [P], grad se [P]) over n_batches independent batches of the task, its
    batches `first_step`, `first_step` + 1, ..."""
    model, task = state.model, state.task
    params = [p for p in model.parameters() if p.requires_grad]
    losses, grads = [], {id(p): [] for p in params}
    for step in range(first_step, first_step + n_batches):
        batch = task.sample(batch_size, step)
        loss = task.loss(model, batch)
        for p, g in zip(params, torch.autograd.grad(loss, params), strict=True):
            grads[id(p)].append(g)
        losses.append(float(loss.detach()))
    per = {k: torch.stack(v) for k, v in grads.items()}
    mean = in_flat_order(model, lambda p: per[id(p)].mean(0) if id(p) in per else torch.zeros_like(p))
    se = in_flat_order(model, lambda p: per[id(p)].std(0) / math.sqrt(n_batches) if id(p) in per
                        else torch.zeros_like(p))
    losses = np.array(losses)
    return losses.mean(), losses.std(ddof=1) / math.sqrt(n_batches), mean, se


def assert_matches_monte_carlo(state: State, numbers: int = NUMBERS, n_batches: int = N_BATCHES) -> None:
    """The z-test of the module docstring, batches of about `numbers` sampled numbers (≥ 64
    sequences). A state that fails is tested again on fresh batches four times larger, and fails
    only if that test fails too: products of up to six Gaussians have heavy tails, which the
    batch-mean standard error understates, while a wrong term keeps its bias and the second
    test's halved standard errors find it more surely. A correct objective still fails with
    probability ≤ ALPHA."""
    batch_size = max(64, numbers // max(1, state.task.sequence_size))
    first = _monte_carlo_verdict(state, n_batches, batch_size, first_step=0)
    if first is not None:
        again = _monte_carlo_verdict(state, n_batches, 4 * batch_size, first_step=n_batches)
        assert again is None, f"{first}; again on fresh batches four times larger: {again}"


def _monte_carlo_verdict(state: State, n_batches: int, batch_size: int,
                         first_step: int) -> str | None:
    """What the z-test finds wrong on these batches, or None."""
    L, g = state.objective.loss_grad(state.params)
    mc_L, se_L, mc_g, se_g = monte_carlo(state, n_batches, batch_size, first_step)
    keep = state.trainable
    z = z_bound(1 + int(keep.sum()), n_batches)
    tol_L = z * se_L + ROUNDING * max(1.0, abs(L))
    if abs(L - mc_L) > tol_L:
        return (f"{state}: exact loss {L:.6g}, Monte Carlo {mc_L:.6g} ± {se_L:.3g} (z = "
                f"{abs(L - mc_L) / max(se_L, 1e-300):.2f} > {z:.2f})")
    scale = max(1.0, float(np.max(np.abs(g[keep]))))
    tol_g = z * se_g[keep] + ROUNDING * scale
    bad = np.abs(g[keep] - mc_g[keep]) > tol_g
    if not bad.any():
        return None
    worst = int(np.argmax(np.abs(g[keep] - mc_g[keep]) / tol_g))
    return (f"{state}: {int(bad.sum())} of {int(keep.sum())} gradient components off the Monte "
            f"Carlo by more than {z:.2f} standard errors; worst: exact {g[keep][worst]:.6g}, Monte "
            f"Carlo {mc_g[keep][worst]:.6g} ± {se_g[keep][worst]:.3g}")


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
        assert max(non_default(*pair, s.values) for s in states) >= 1, pair
        for s in states:
            assert np.all(s.params[s.trainable] != 0) or getattr(s.objective, "project", None), pair
        assert len({repr(sorted(itertools.chain(*(v.items() for v in s.values.values()))))
                    for s in states}) == len(states)
