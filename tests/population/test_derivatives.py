"""Gradient, Hessian and Hessian-vector product against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from fastattn._core_loader import has_cpp
from fastattn.population import hessian, hvp, loss_and_grad

from .conftest import FAMILY_DIMS, random_moments, random_params

pytestmark = pytest.mark.skipif(not has_cpp(), reason="needs the compiled core")


@pytest.mark.parametrize(("family", "dims"), FAMILY_DIMS)
def test_gradient_vs_central_differences(rng, family, dims):
    m, _, _ = random_moments(rng, dims[0])
    th = random_params(rng, family, dims)
    _, g = loss_and_grad(family, th, dims, m)
    h = 1e-5
    fd = np.empty_like(th)
    for p in range(th.size):
        e = np.zeros_like(th)
        e[p] = h
        fd[p] = (loss_and_grad(family, th + e, dims, m)[0]
                 - loss_and_grad(family, th - e, dims, m)[0]) / (2 * h)
    assert np.max(np.abs(fd - g)) < 1e-6 * max(1.0, np.max(np.abs(g)))


@pytest.mark.parametrize(("family", "dims"), FAMILY_DIMS)
def test_hessian_vs_gradient_differences_and_hvp(rng, family, dims):
    m, _, _ = random_moments(rng, dims[0])
    th = random_params(rng, family, dims)
    Hm = hessian(family, th, dims, m)
    assert np.allclose(Hm, Hm.T, atol=1e-12 * np.abs(Hm).max())
    h = 1e-5
    fd = np.empty_like(Hm)
    for p in range(th.size):
        e = np.zeros_like(th)
        e[p] = h
        fd[:, p] = (loss_and_grad(family, th + e, dims, m)[1]
                    - loss_and_grad(family, th - e, dims, m)[1]) / (2 * h)
    assert np.max(np.abs(fd - Hm)) < 1e-6 * max(1.0, np.abs(Hm).max())
    for _ in range(3):
        u = rng.standard_normal(th.size)
        np.testing.assert_allclose(hvp(family, th, u, dims, m), Hm @ u, rtol=0,
                                   atol=1e-12 * np.abs(Hm).max() * np.abs(u).sum())
