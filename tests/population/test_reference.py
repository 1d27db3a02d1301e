"""The family-name API (C++) equals the torch autograd reference on batches, shared and per-model
moments; the torch backend; cubic_mlp is merged. (Each objective against autograd, finite differences
and its Hessian: test_objective_suite.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from fastattn.models.cubic_mlp import CubicMLPConfig
from fastattn.models.linear_attention import MergedConfig, SeparateConfig
from fastattn.population import gamma, linear_dims, loss_and_grad, reference

from .conftest import LINEAR_CONFIGS, random_moments, random_params


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300)


@pytest.mark.parametrize("config", LINEAR_CONFIGS)
def test_batch_mixed_moments(rng, config):
    K = 4
    ms = [random_moments(rng, config.dim)[0] for _ in range(K)]
    th = np.stack([random_params(rng, config) for _ in range(K)])
    L, g = loss_and_grad(config, th, ms)
    assert L.shape == (K,) and g.shape == th.shape
    for k in range(K):
        Lr, gr = reference.loss_and_grad(config, th[k], ms[k])
        assert abs(L[k] - Lr) / abs(Lr) < 1e-10
        assert _rel(g[k], gr) < 1e-10
    # shared moments
    L1, g1 = loss_and_grad(config, th, ms[0])
    for k in range(K):
        Lr, gr = reference.loss_and_grad(config, th[k], ms[0])
        assert abs(L1[k] - Lr) / abs(Lr) < 1e-10 and _rel(g1[k], gr) < 1e-10


def test_torch_backend_and_gamma(rng):
    config = SeparateConfig(3, 2, rank=2)
    m, _, _ = random_moments(rng, 3)
    th = random_params(rng, config)
    L, g = loss_and_grad(config, th, m, backend="torch")
    Lc, gc = loss_and_grad(config, th, m, backend="cpp")
    assert abs(L - Lc) < 1e-12 * abs(L) and _rel(g, gc) < 1e-10
    D, H, R = linear_dims(config)
    K = th[H : H + H * R * D].reshape(H, R, D)
    Q = th[H + H * R * D :].reshape(H, R, D)
    G = sum(th[i] * K[i].T @ Q[i] for i in range(H))
    np.testing.assert_allclose(gamma(config, th), G, rtol=1e-12, atol=1e-14)


def test_cubic_mlp_equals_merged(rng):
    m, _, _ = random_moments(rng, 3)
    th = random_params(rng, MergedConfig(3, 4))
    L1, g1 = loss_and_grad(MergedConfig(3, 4), th, m)
    L2, g2 = loss_and_grad(CubicMLPConfig(3, 4), th, m)
    assert L1 == L2 and np.array_equal(g1, g2)
