"""He et al. 2025's task variants through LinearRegression: β ~ N(0, I/d), noisy query labels,
Toeplitz covariates, evaluation at another context length."""

import numpy as np
import pytest
import torch

from fastattn.tasks import LinearRegression, spectrum
from fastattn.tasks.spectra import toeplitz_cov


def test_prior_noise_and_covariance_moments():
    d, sigma2 = 4, 0.3
    cov = toeplitz_cov(d, 0.5)
    task = LinearRegression(d, context=6, cov=cov, noise=sigma2, w_cov=np.eye(d) / d)
    b = task.sample(40_000, 0)
    w = b.w.numpy()
    np.testing.assert_allclose(w.T @ w / len(w), np.eye(d) / d, atol=0.01)
    x = b.x.reshape(-1, d).numpy()
    np.testing.assert_allclose(x.T @ x / len(x), cov, atol=0.02)
    noise_q = (b.y_q - torch.einsum("bd,bd->b", b.x_q, b.w)).numpy()
    noise_ctx = (b.y - torch.einsum("bnd,bd->bn", b.x, b.w)).numpy()
    assert abs(noise_q.var() - sigma2) < 0.01 and abs(noise_ctx.var() - sigma2) < 0.01


def test_toeplitz_and_identity():
    np.testing.assert_allclose(toeplitz_cov(3, 0.5), [[1, .5, .25], [.5, 1, .5], [.25, .5, 1]])
    np.testing.assert_array_equal(spectrum("identity", 3), np.ones(3))
    with pytest.raises(ValueError, match="rho"):
        toeplitz_cov(3, 1.0)


def test_with_context_keeps_everything_but_the_length():
    task = LinearRegression(3, context=40, spectrum=[1.0] * 3, noise=0.1, data_seed=5)
    other = task.with_context(100)
    assert other.max_context == 100 and other.data_seed == 5 and other.noise == 0.1
    assert task.with_context(40) == task
    assert task.with_context((10, 20)).context_lengths.tolist() == [10, 20]
