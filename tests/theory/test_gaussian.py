"""The shared Gaussian moments against Monte Carlo, and the C++ core's copy against them."""

import numpy as np
import pytest

from fastattn import population
from fastattn.models.linear_attention import MergedConfig
from fastattn.population import Moments
from fastattn.theory import gaussian
from helpers import assert_mc_agrees, mc_mean_and_se, random_spd

D = 3


def _samples(rng, cov, n_draws, size):
    return rng.standard_normal((size, n_draws, D)) @ np.linalg.cholesky(cov).T


def test_fourth_moment_matches_monte_carlo(rng):
    cov, a = random_spd(rng, D), rng.standard_normal((D, D))
    x = _samples(rng, cov, 1, 400_000)[:, 0]                                   # [S, D]
    per = np.einsum("si,sj,jk,sk,sl->sil", x, x, a, x, x)                      # x xᵀ A x xᵀ
    mean, se = mc_mean_and_se(per)
    assert_mc_agrees(mean, se, gaussian.gaussian_fourth_moment(cov, a))


@pytest.mark.parametrize("lengths", [(5,), (2, 7)])
def test_wishart_second_moment_matches_monte_carlo(rng, lengths):
    cov, a = random_spd(rng, D), rng.standard_normal((D, D))     # A need not be symmetric
    size = 200_000
    n = rng.choice(lengths, size)
    x = _samples(rng, cov, max(lengths), size) * (np.arange(max(lengths)) < n[:, None])[..., None]
    cov_hat = np.einsum("sni,snj->sij", x, x) / n[:, None, None]              # [S, D, D]
    mean, se = mc_mean_and_se(cov_hat @ a @ cov_hat)
    want = gaussian.wishart_second_moment(cov, a, np.mean(1 / np.asarray(lengths)))
    assert_mc_agrees(mean, se, want)


def test_beta_second_moment_matches_monte_carlo(rng):
    cov, w_cov, noise, n = random_spd(rng, D), random_spd(rng, D), 0.4, 6
    mu = rng.standard_normal(D)
    size = 200_000
    x = _samples(rng, cov, n, size)                                            # [S, N, D]
    w = rng.standard_normal((size, D)) @ np.linalg.cholesky(w_cov).T + mu
    y = np.einsum("snd,sd->sn", x, w) + np.sqrt(noise) * rng.standard_normal((size, n))
    beta = np.einsum("sn,snd->sd", y, x) / n
    mean, se = mc_mean_and_se(beta[:, :, None] * beta[:, None, :])
    want = gaussian.beta_second_moment(cov, w_cov + np.outer(mu, mu), noise, 1 / n)
    assert_mc_agrees(mean, se, want)


def test_eigenvalues_of_the_second_moment(rng):
    lam = np.sort(rng.uniform(0.1, 1.0, D))[::-1]
    q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    b = gaussian.wishart_second_moment((q * lam) @ q.T, np.eye(D), 0.3)
    np.testing.assert_allclose(q.T @ b @ q, np.diag(gaussian.cov_hat_sq_eigenvalues(lam, 0.3)),
                               atol=1e-14)


def test_cpp_core_uses_the_same_beta_second_moment(rng):
    """L(Γ) = tr(ΛS) + σ² − 2 tr(Γ ΛSΛ) + tr(Γᵀ B Γ Λ) and ∂L/∂Γ = 2(BΓΛ − ΛSΛ) with B from
    gaussian.py, against the compiled core (merged, one head, v = 1, so U = Γ)."""
    cov, ws = random_spd(rng, D), random_spd(rng, D)
    m = Moments(cov=cov, w_second=ws, noise=0.3, inv_n=0.2)
    g = rng.standard_normal((D, D))
    loss, grad = population.loss_and_grad(MergedConfig(D, 1), np.concatenate([[1.0], g.ravel()]),
                                          m, backend="cpp")
    b, a = gaussian.beta_second_moment(cov, ws, 0.3, 0.2), cov @ ws @ cov
    want = np.trace(cov @ ws) + 0.3 - 2 * np.trace(g @ a) + np.trace(g.T @ b @ g @ cov)
    np.testing.assert_allclose(loss, want, rtol=1e-12)
    np.testing.assert_allclose(grad[1:].reshape(D, D), 2 * (b @ g @ cov - a), rtol=1e-10, atol=1e-13)


def test_bad_shapes_name_the_argument():
    with pytest.raises(ValueError, match="a must be"):
        gaussian.wishart_second_moment(np.eye(2), np.eye(3), 0.1)
    with pytest.raises(ValueError, match="cov must be"):
        gaussian.beta_second_moment(np.ones(3), np.eye(3), 0.0, 0.1)
