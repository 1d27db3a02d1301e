"""The exact autoregressive loss (Sander et al. 2024) never goes below zero and is accurate relative
to its own value near a zero-loss optimum (issue 23, defect 3: the expanded "− 2 p_T tr C + d"
form cancelled to −7.8e-14 at the optima the Fig. 3 runs reach).

References: the paper's expanded row losses (`theory.sander2024`, fine away from the optimum) and,
near an optimum θ*, the second-order value ½ δᵀ H δ with the core's Hessian (exact for a quartic up
to O(|δ|³), which is below rounding for |δ| = 1e-7)."""

from __future__ import annotations

import numpy as np
import pytest

from fastattn.models.autoregressive import ARDiagConfig
from fastattn.population import AutoRegressiveObjective
from fastattn.theory import sander2024 as th


def _optima(d: int, tmax: int, rng: np.random.Generator):
    """(context, objective, θ*) at zero-loss optima of both contexts with random scales."""
    for c in rng.uniform(0.3, 3.0, 20):                    # Prop. 3: C = c I, p_T = 1/c, H = d
        P = np.zeros((tmax, tmax))
        for T in range(2, tmax + 1):
            P[T - 2, T - 1] = 1 / c
        yield "unitary", AutoRegressiveObjective("unitary", ARDiagConfig(d, 1, tmax), factored=False), \
            np.concatenate([(c * np.eye(d)).ravel(), P.ravel()])
    for p_last, p_before in rng.uniform(0.2, 2.0, (10, 2)):   # Prop. 6 family (orthogonal)
        C, P = th.prop6_parameters(d, tmax, p_last, p_before)
        yield "orthogonal", AutoRegressiveObjective("orthogonal", ARDiagConfig(d, 1, tmax), factored=False), \
            np.concatenate([C.ravel(), P.ravel()])
    A, B, P = th.lemma3_parameters(d, tmax)
    yield "orthogonal", AutoRegressiveObjective("orthogonal", ARDiagConfig(d, d // 2, tmax)), \
        np.concatenate([A.ravel(), B.ravel(), P.ravel()])


def test_loss_at_zero_loss_optima_is_nonnegative_and_at_rounding(rng):
    for context, obj, theta in _optima(10, 20, rng):
        loss = obj.loss_grad(theta)[0]
        assert 0 <= loss < 1e-26, (context, loss)


def test_loss_near_an_optimum_equals_its_quadratic_model(rng):
    """At θ* + δ the loss equals ½ δᵀ H δ to 1e-6 relative (the expanded form's ±1e-13 noise is
    10⁶ times larger than this loss ≈ 1e-14)."""
    for context, obj, theta in _optima(6, 8, rng):
        delta = 1e-7 * rng.standard_normal(theta.size)
        H = obj.hessian(theta)
        want = 0.5 * delta @ H @ delta
        got = obj.loss_grad(theta + delta)[0]
        assert got == pytest.approx(want, rel=1e-6), (context, got, want)


@pytest.mark.parametrize("context", ["unitary", "orthogonal", "unitary_paper"])
def test_loss_away_from_optima_equals_the_papers_expanded_form(context, rng):
    d, tmax = 4, 6
    C, P = rng.standard_normal((d, d)), rng.standard_normal((tmax, tmax))
    got = AutoRegressiveObjective(context, ARDiagConfig(d, 1, tmax), factored=False).loss_grad(
        np.concatenate([C.ravel(), P.ravel()]))[0]
    assert got == pytest.approx(th.population_loss(C, P, context), rel=1e-13)
