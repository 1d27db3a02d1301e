"""The closed-form population loss and gradient equal Monte-Carlo averages over sampled sequences.

Sequences are sampled directly here (x ~ N(0, Λ) by Cholesky, w ~ N(μ, Σ_w), label noise on every
y including y_q, context length fixed or random), independently of any library task class.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastattn.models.linear_attention import MergedConfig, SeparateConfig
from fastattn.population import Moments, loss_and_grad, reference
from helpers import assert_mc_agrees

from .conftest import random_moments, random_params

N_SEQ = 200_000


def _sample(rng, m: Moments, mu, sig, n_lengths: np.ndarray, n_seq: int):
    D = m.cov.shape[0]
    n_max = int(n_lengths.max())
    Lc = np.linalg.cholesky(m.cov)
    Ls = np.linalg.cholesky(sig)
    N = rng.choice(n_lengths, size=n_seq)
    x = rng.standard_normal((n_seq, n_max + 1, D)) @ Lc.T
    w = mu + rng.standard_normal((n_seq, D)) @ Ls.T
    y = np.einsum("snd,sd->sn", x, w) + np.sqrt(m.noise) * rng.standard_normal((n_seq, n_max + 1))
    mask = (np.arange(n_max)[None, :] < N[:, None]).astype(float)
    beta = np.einsum("sn,snd->sd", mask * y[:, :n_max], x[:, :n_max]) / N[:, None]
    return beta, x[:, n_max], y[:, n_max]


@pytest.mark.slow
@pytest.mark.parametrize("config", [MergedConfig(3, 2), SeparateConfig(3, 2, rank=2)])
@pytest.mark.parametrize("random_n", [False, True])
def test_closed_form_equals_monte_carlo(rng, config, random_n):
    D = config.dim
    lengths = np.arange(2, 9) if random_n else np.array([int(rng.integers(3, 10))])
    c = float(np.mean(1.0 / lengths))
    m, mu, sig = random_moments(rng, D, inv_n=c)
    th = random_params(rng, config, scale=0.6)
    beta, xq, yq = (torch.as_tensor(a) for a in _sample(rng, m, mu, sig, lengths, N_SEQ))

    tht = torch.tensor(th, requires_grad=True)
    G = reference.gamma_torch(config, tht)
    per = (yq - torch.einsum("sa,ab,sb->s", beta, G, xq)) ** 2
    mc_loss = per.mean()
    mc_loss_value = float(mc_loss.detach())
    (mc_grad,) = torch.autograd.grad(mc_loss, tht)
    # per-sample gradients: d(per_s)/dΓ = -2 r_s β_s x_sᵀ, then the Jacobian of Γ(θ)
    with torch.no_grad():
        r = yq - torch.einsum("sa,ab,sb->s", beta, G, xq)
    J = torch.autograd.functional.jacobian(lambda t: reference.gamma_torch(config, t),
                                           torch.tensor(th))
    g_s = torch.einsum("s,sa,sb,abp->sp", -2 * r, beta, xq, J)
    assert torch.allclose(g_s.mean(0), mc_grad, rtol=1e-8, atol=1e-10)

    L, g = loss_and_grad(config, th, m)
    se_L = float(per.detach().std() / np.sqrt(N_SEQ))
    se_g = (g_s.std(0) / np.sqrt(N_SEQ)).numpy()
    assert_mc_agrees(mc_loss_value, se_L, L)
    assert_mc_agrees(mc_grad.numpy(), se_g, g)
