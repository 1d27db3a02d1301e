"""He et al. 2025 closed forms against Monte Carlo, finite differences and the spec's check values."""

import math

import numpy as np
import pytest
import torch

from fastattn.analysis.risk import monte_carlo_risk
from fastattn.models.predictors import GradientDescent, Ridge, debiased_gd
from fastattn.tasks import LinearRegression
from fastattn.theory import he2025 as th

# (d, L, σ²) settings that are not in the spec
SETTINGS = [(3, 11, 0.3), (7, 25, 0.05), (4, 60, 1.0)]


def _task(d, L, sigma2):
    return LinearRegression(d, context=L, spectrum=[1.0] * d, noise=sigma2, w_cov=np.eye(d) / d)


@pytest.mark.parametrize(("d", "L", "sigma2"), SETTINGS)
def test_closed_form_risks_equal_monte_carlo(d, L, sigma2):
    task = _task(d, L, sigma2)
    eta = 0.8 * th.eta_star(d, L, sigma2)
    for predictor, closed in ((GradientDescent(eta), th.risk_gd(eta, d, L, sigma2)),
                              (debiased_gd(eta), th.risk_dgd(eta, d, L, sigma2))):
        risk = monte_carlo_risk(predictor, task, 20_000, seed=d)
        assert abs(risk.mean - closed) < 4 * risk.se, (risk, closed)


@pytest.mark.parametrize(("d", "L", "sigma2"), SETTINGS)
def test_optimal_steps_minimise_the_closed_forms(d, L, sigma2):
    grid = np.linspace(0.5, 1.2, 2001)
    assert abs(grid[np.argmin(th.risk_dgd(grid, d, L, sigma2))] - th.eta_star(d, L, sigma2)) < 1e-3
    assert abs(grid[np.argmin(th.risk_gd(grid, d, L, sigma2))] - th.eta_gd_opt(d, L, sigma2)) < 1e-3
    es = th.eta_star(d, L, sigma2)
    assert math.isclose(th.risk_dgd(es, d, L, sigma2), 1 + sigma2 - es * (L - 1) / L)


def test_ridge_is_the_bayes_risk():
    d, L, sigma2 = 3, 11, 0.3
    risk = monte_carlo_risk(Ridge(sigma2 * d), _task(d, L, sigma2), 40_000, seed=1)
    bayes, se = th.bayes_risk(d, L, sigma2, n=20_000, seed=2)
    assert abs(risk.mean - bayes) < 4 * math.hypot(risk.se, se)


def test_spec_check_values():
    """Spec §5.1, §5.2 and §5.4 numbers (d = 5, L = 40, σ² = 0.1; ξ = 0.2, σ² = 3)."""
    assert round(th.eta_star(5, 40, 0.1), 5) == 0.87912
    assert round(float(th.risk_dgd(th.eta_star(5, 40, 0.1), 5, 40, 0.1)), 5) == 0.24286
    assert round(float(th.risk_gd(th.eta_gd_opt(5, 40, 0.1), 5, 40, 0.1)), 5) == 0.23978
    assert round(float(th.mu_gamma(0.13, 5, 40, 0.1)), 3) == 3.381
    assert round(th.dgd_limit(0.2, 3.0), 5) == 3.44444
    assert round(th.bayes_risk_limit(0.2, 3.0), 5) == 3.40512
    assert round(th.theorem1_bound(0.2, 3.0), 4) == 1.0231
    assert round(th.bayes_risk_limit(0.125, 0.1), 5) == 0.11406
    assert round(th.theorem1_bound(0.125, 0.1), 3) == 2.085
    with pytest.raises(ValueError, match="sigma2"):
        th.theorem1_bound(2.0, 0.1)


@pytest.mark.parametrize(("xi", "sigma2"), [(0.3, 0.5), (0.1, 2.0), (0.5, 0.2)])
def test_theorem1_ratio_is_below_its_bound(xi, sigma2):
    ratio = th.dgd_limit(xi, sigma2) / th.bayes_risk_limit(xi, sigma2)
    assert 1.0 <= ratio <= th.theorem1_bound(xi, sigma2)


def test_bayes_limit_is_the_large_l_limit_of_the_finite_bayes_risk():
    xi, sigma2 = 0.25, 0.5
    finite, se = th.bayes_risk(20, 80, sigma2, n=4000, seed=0)
    assert abs(finite - th.bayes_risk_limit(xi, sigma2)) < 0.01 + 4 * se


def test_approx_grad_matches_finite_differences():
    rng = np.random.default_rng(0)
    w, m = rng.normal(0, 0.3, 4), rng.normal(0, 2, 4)
    gw, gm = th.approx_grad(w, m, 5, 40, 0.1)
    h = 1e-6
    for i in range(4):
        e = np.eye(4)[i] * h
        fd_w = (th.approx_loss(w + e, m, 5, 40, 0.1) - th.approx_loss(w - e, m, 5, 40, 0.1)) / (2 * h)
        fd_m = (th.approx_loss(w, m + e, 5, 40, 0.1) - th.approx_loss(w, m - e, 5, 40, 0.1)) / (2 * h)
        assert math.isclose(gw[i], fd_w, rel_tol=1e-6, abs_tol=1e-8)
        assert math.isclose(gm[i], fd_m, rel_tol=1e-6, abs_tol=1e-8)


def test_mu_gamma_minimises_the_approximate_loss_on_the_manifold():
    d, L, s2 = 6, 30, 0.2
    gamma = 0.17
    w, m = th.manifold_point(gamma, [1, -1, -1, 1, 1], d, L, s2)
    _, gm = th.approx_grad(w, m, d, L, s2)
    # the gradient in the direction that scales every μ_h is zero at μ_γ
    assert abs(gm @ m) < 1e-10
    assert math.isclose(2 * 1e-4 * float(th.mu_gamma(1e-4, d, L, s2)), th.eta_star(d, L, s2),
                        rel_tol=1e-6)


@pytest.mark.parametrize(("d", "L", "sigma2"), SETTINGS)
def test_the_single_head_reference_is_the_best_scale_at_its_width(d, L, sigma2):
    """§1.6's single head (ω, μ) = (1/√d, √d/(1 + (1+σ²)(d/L)e)): μ minimises the approximate
    loss L̃ over μ at ω = 1/√d, found here by a bounded scalar search on L̃ itself."""
    from scipy.optimize import minimize_scalar

    omega, mu = th.single_head_nw(d, L, sigma2)
    assert omega == pytest.approx(1 / math.sqrt(d))
    best = minimize_scalar(lambda m: th.approx_loss([omega], [m], d, L, sigma2),
                           bounds=(0.0, 2 * math.sqrt(d)), method="bounded",
                           options={"xatol": 1e-10})
    assert mu == pytest.approx(best.x, rel=1e-6)


def test_reduced_loss_equals_monte_carlo_of_the_reduced_model():
    from fastattn.models import KernelRegressors

    d, L, s2 = 4, 15, 0.2
    omega, mu = np.array([0.3, -0.2]), np.array([1.5, -2.0])
    loss, _ = th.reduced_loss(omega, mu, d, L, s2, n=10_000, seed=3)
    model = KernelRegressors(d, 2)
    with torch.no_grad():
        model.omega.copy_(torch.from_numpy(omega))
        model.mu.copy_(torch.from_numpy(mu))
    risk = monte_carlo_risk(model, _task(d, L, s2), 20_000, seed=4)
    assert abs(risk.mean - loss) < 4 * risk.se + 5e-3  # the semi-analytic side has its own MC error


def test_reduced_loss_check_values():
    """Spec §5.1: two heads ω = ±0.13 → μ* = ±3.392, ℒ ≈ 0.242 (d = 5, L = 40, σ² = 0.1)."""
    loss, mu = th.reduced_loss([0.13, -0.13], None, 5, 40, 0.1, n=20_000, seed=0)
    assert abs(loss - 0.242) < 0.003
    assert abs(mu[0] - 3.392) < 0.05 and abs(mu[0] + mu[1]) < 0.05


def test_small_gamma_pair_is_debiased_gd_up_to_gamma_squared():
    """Spec §5.3 / E14: heads (γ, −γ) with μ = ±η/(2γ) equal dGD(η) up to O(γ²)."""
    from fastattn.models import KernelRegressors

    d, L, s2, eta = 5, 40, 0.1, 0.9
    batch = _task(d, L, s2).fixed_dataset(2000, 0)
    dgd = debiased_gd(eta)(batch.x, batch.y, batch.x_q)
    errors = []
    for gamma in (0.02, 0.01):
        model = KernelRegressors(d, 2)
        with torch.no_grad():
            model.omega.copy_(torch.tensor([gamma, -gamma], dtype=torch.float64))
            model.mu.copy_(torch.tensor([1.0, -1.0], dtype=torch.float64) * eta / (2 * gamma))
            errors.append(float((model(batch.x, batch.y, batch.x_q) - dgd).pow(2).mean().sqrt()))
    assert 3.5 < errors[0] / errors[1] < 4.5, errors
