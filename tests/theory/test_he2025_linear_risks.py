"""Exact risks of linear predictors (He et al. 2025 spec §5.1, §5.6–5.8): closed forms against
Monte Carlo within 4 standard errors, their optimisers, and the spec's §5.7 table."""

import numpy as np
import pytest
import torch

from fastattn.analysis.risk import monte_carlo_risk
from fastattn.models.predictors import (
    GradientDescent,
    MultiTaskGD,
    MultiTaskRidge,
    Ridge,
    separate_dgd,
    weighted_dgd,
)
from fastattn.tasks import LinearRegression, MultiTaskRegression
from fastattn.tasks.multitask_regression import PAPER_SUPPORTS
from fastattn.tasks.spectra import toeplitz_cov
from fastattn.theory import he2025 as th


def _within(risk, closed):
    assert abs(risk.mean - closed) < 4 * risk.se, (risk, closed)


@pytest.mark.parametrize("debiased", [True, False])
def test_preconditioned_gd_on_non_isotropic_covariates(debiased):
    d, L, s2 = 4, 13, 0.2
    cov = toeplitz_cov(d, 0.6)
    gamma = np.random.default_rng(0).normal(0, 0.4, (d, d))            # dense, not symmetric
    task = LinearRegression(d, context=L, cov=cov, noise=s2, w_cov=np.eye(d) / d)
    risk = monte_carlo_risk(GradientDescent(1.0, debiased, gamma), task, 40_000, seed=3)
    _within(risk, th.risk_linear(gamma, L, s2, cov=cov, debiased=debiased))


def test_multitask_predictors_equal_their_closed_forms():
    task = MultiTaskRegression(6, PAPER_SUPPORTS, context=11, noise=0.2)
    mask, v = task.support_mask, 1 / 6
    for pred in (separate_dgd(0.8, mask), weighted_dgd([0.5, 0.6, 0.9, 0.9, 0.6, 0.5], 2)):
        risk = monte_carlo_risk(pred, task, 30_000, seed=1)
        _within(risk, th.multitask_risk(pred.gammas, mask, 11, 0.2, v).mean())
    nofloor = MultiTaskRegression(6, PAPER_SUPPORTS, context=11, noise=0.2, query_noise=False)
    pred = MultiTaskGD(separate_dgd(0.8, mask).gammas, debiased=False)
    _within(monte_carlo_risk(pred, nofloor, 30_000, seed=2),
            th.multitask_risk(pred.gammas, mask, 11, 0.2, v, debiased=False, query_noise=False).mean())


def test_optimal_preconditioner_is_stationary_and_isotropic_eta_star():
    d, L, s2 = 4, 17, 0.3
    cov = toeplitz_cov(d, 0.5)
    best = th.optimal_preconditioner(cov, L, s2, 1 / d)
    rng = np.random.default_rng(4)
    base = th.risk_linear(best, L, s2, cov=cov)
    for _ in range(5):
        e = rng.normal(size=(d, d)) * 1e-3
        assert th.risk_linear(best + e, L, s2, cov=cov) > base
        # stationary: the first-order change vanishes (central difference)
        assert abs(th.risk_linear(best + e, L, s2, cov=cov) - th.risk_linear(best - e, L, s2, cov=cov)) < 1e-9
    np.testing.assert_allclose(th.optimal_preconditioner(np.eye(d), L, s2, 1 / d),
                               th.eta_star(d, L, s2) * np.eye(d), rtol=1e-13)
    # Γ*(L) turns towards Σ⁻¹ as L grows (spec §5.6)
    inv = np.linalg.inv(cov)
    cos = [np.sum(g * inv) / np.linalg.norm(g) / np.linalg.norm(inv)
           for g in (th.optimal_preconditioner(cov, n, s2, 1 / d) for n in (10, 40, 160, 640))]
    assert np.all(np.diff(cos) > 0) and cos[-1] > 0.999


def test_best_combination_finds_eta_star():
    d, L, s2 = 5, 40, 0.1
    (eta,), risk = th.best_combination(np.eye(d)[None], lambda g: th.risk_linear(g, L, s2))
    assert eta == pytest.approx(th.eta_star(d, L, s2), rel=1e-10)
    assert risk == pytest.approx(float(th.risk_dgd(eta, d, L, s2)), rel=1e-10)


def test_lintf_length_table_of_spec_5_7():
    """Spec §5.7: LinTF with η_train = 0.8602 at L_train = 40 (d = 5, σ² = 0.1)."""
    expect = {10: 0.746, 20: 0.485, 40: 0.240, 60: 0.365, 80: 0.860, 100: 1.724}
    got = th.linear_attention_length_risk(th.eta_gd_opt(5, 40, 0.1), list(expect), 40, 5, 0.1)
    np.testing.assert_allclose(got, list(expect.values()), atol=6e-4)


def test_multitask_ridge_is_ridge_for_one_task_and_beats_dgd():
    task = MultiTaskRegression(5, ((0, 1, 2, 3, 4),), context=9, noise=0.2)
    b = task.sample(50, 0)
    torch.testing.assert_close(MultiTaskRidge(task.support_mask, 1.0)(b.x, b.y, b.x_q)[:, 0],
                               Ridge(1.0)(b.x, b.y[..., 0], b.x_q), rtol=1e-12, atol=1e-12)
    two = MultiTaskRegression(6, PAPER_SUPPORTS, context=20, noise=0.1)
    bayes = monte_carlo_risk(MultiTaskRidge(two.support_mask, 0.6), two, 10_000, seed=4)
    best = th.best_combination(np.stack([np.diag(r) for r in two.support_mask])[None],
                               lambda g: th.multitask_risk(g, two.support_mask, 20, 0.1, 1 / 6).mean())[1]
    assert bayes.mean < best - 4 * bayes.se
