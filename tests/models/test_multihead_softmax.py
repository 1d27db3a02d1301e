"""He et al. 2025 models against their literal formulas (float64, odd sizes)."""

import math

import numpy as np
import pytest
import torch

from fastattn.models import (
    KernelRegressors,
    MultiHeadLinear,
    MultiHeadSoftmax,
    build_model,
    config_from_dict,
    config_to_dict,
)
from fastattn.models import reference as ref
from fastattn.tasks import LinearRegression

D, L, H = 3, 7, 3


def _batch(d=D, n=L, b=5, seed=0):
    task = LinearRegression(d, context=n, spectrum=[1.0] * d, noise=0.1, w_cov=np.eye(d) / d)
    return task.fixed_dataset(b, seed)


def _full_ov(model, g):
    """OV^(h) `[H, D+1, D+1]`: random rows above the effective last row (they must not matter)."""
    last = model.extract_ov()
    rows = torch.randn(last.shape[0], last.shape[1] - 1, last.shape[1], generator=g,
                       dtype=torch.float64)
    return torch.cat([rows, last[:, None]], 1)


def _authors_form(model, x, y, x_q):
    """The authors' single-query computation: q = W_Q z_q, k_ℓ = W_K z_ℓ, logits q·k/√D,
    v_ℓ = W_V z_ℓ, ŷ = Σ_h W_O^h Σ_ℓ p_ℓ v_ℓ."""
    z = torch.cat([x, y[..., None]], -1)
    z_q = torch.cat([x_q, torch.zeros_like(x_q[:, :1])], -1)
    q = torch.einsum("hij,bj->bhi", model.wq, z_q)
    k = torch.einsum("hij,blj->bhli", model.wk, z)
    v = torch.einsum("hij,blj->bhli", model.wv, z)
    p = torch.softmax(torch.einsum("bhi,bhli->bhl", q, k) / math.sqrt(z.shape[-1]), -1)
    return torch.einsum("hi,bhl,bhli->b", model.wo, p, v)


def test_multihead_softmax_equals_the_paper_formula_and_the_authors_form():
    g = torch.Generator().manual_seed(1)
    model = MultiHeadSoftmax(D, H, init_seed=4)
    batch = _batch()
    y_hat = model(batch.x, batch.y, batch.x_q)
    Z = batch.tokens.transpose(1, 2)
    literal = ref.query_readout(ref.multihead_softmax_attention(Z, _full_ov(model, g),
                                                                model.extract_kq()))
    torch.testing.assert_close(y_hat, literal, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(y_hat, _authors_form(model, batch.x, batch.y, batch.x_q),
                               rtol=1e-12, atol=1e-12)


def test_multihead_softmax_gradients_match_the_literal_form():
    model = MultiHeadSoftmax(D, H, init_seed=2)
    batch = _batch(b=9)
    loss = ((model(batch.x, batch.y, batch.x_q) - batch.y_q) ** 2).mean()
    grads = torch.autograd.grad(loss, list(model.parameters()))
    lit = ((_authors_form(model, batch.x, batch.y, batch.x_q) - batch.y_q) ** 2).mean()
    expect = torch.autograd.grad(lit, list(model.parameters()))
    for a, b in zip(grads, expect, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-13)


def test_padded_contexts_equal_the_truncated_context():
    model = MultiHeadSoftmax(D, 2, init_seed=0)
    task = LinearRegression(D, context=(3, L), spectrum=[1.0] * D, noise=0.1)
    batch = task.fixed_dataset(12, 3)
    full = model(batch.x, batch.y, batch.x_q, lengths=batch.lengths)
    for i in range(len(batch)):
        n = int(batch.lengths[i])
        one = model(batch.x[i:i + 1, :n], batch.y[i:i + 1, :n], batch.x_q[i:i + 1])
        torch.testing.assert_close(full[i:i + 1], one, rtol=1e-12, atol=1e-12)


def test_multihead_linear_equals_lintf():
    g = torch.Generator().manual_seed(0)
    model = MultiHeadLinear(D, H, norm_context=40, init_seed=1)
    batch = _batch()
    literal = ref.query_readout(ref.multihead_linear_attention(
        batch.tokens.transpose(1, 2), _full_ov(model, g), model.extract_kq(), 40))
    torch.testing.assert_close(model(batch.x, batch.y, batch.x_q), literal, rtol=1e-12, atol=1e-12)


def test_kernel_regressors_equal_the_nw_formula_in_every_form():
    batch = _batch()
    model = KernelRegressors(D, H, init_scale=0.3, init_seed=5)
    literal = ref.kernel_regressors(batch.x, batch.y, batch.x_q, model.omega, model.mu)
    torch.testing.assert_close(model(batch.x, batch.y, batch.x_q), literal, rtol=1e-12, atol=1e-12)
    for form, omega in (("diagonal", model.omega[:, None].expand(H, D)),
                        ("full", model.omega_matrices())):
        other = KernelRegressors(D, H, omega_form=form)
        with torch.no_grad():
            other.omega.copy_(omega)
            other.mu.copy_(model.mu)
        torch.testing.assert_close(other(batch.x, batch.y, batch.x_q), literal,
                                   rtol=1e-12, atol=1e-12)


def test_patterned_multihead_softmax_is_the_kernel_regressor_sum():
    """KQ = [ω I, 0; 0, 0] and OV last row = [0, μ] reduce §1.2 to §1.5."""
    reduced = KernelRegressors(D, 2, init_scale=0.4, init_seed=1)
    model = MultiHeadSoftmax(D, 2)
    dd = D + 1
    with torch.no_grad():
        for h in range(2):
            w = float(reduced.omega[h]) * math.sqrt(dd)
            model.wq[h] = torch.diag(torch.tensor([w] * D + [0.0], dtype=torch.float64))
            model.wk[h] = torch.eye(dd, dtype=torch.float64)
            model.wv[h] = torch.eye(dd, dtype=torch.float64)
            model.wo[h] = torch.tensor([0.0] * D + [float(reduced.mu[h])], dtype=torch.float64)
    batch = _batch()
    torch.testing.assert_close(model(batch.x, batch.y, batch.x_q),
                               reduced(batch.x, batch.y, batch.x_q), rtol=1e-12, atol=1e-12)


def test_initialisations_and_parameter_count():
    model = MultiHeadSoftmax(5, 2)
    assert model.flat_size() == 3 * 2 * 36 + 2 * 6  # spec §1.3: 228 at d=5, H=2
    assert float(model.wq.detach().abs().max()) <= 1 / math.sqrt(6)
    assert float(model.wo.detach().abs().max()) <= 1 / math.sqrt(12)
    assert float(model.wq.detach().std()) > 0.15  # U(±1/√6) has std 0.236
    small = MultiHeadSoftmax(5, 4, init_mode="oppo_small_id")
    assert torch.sign(torch.diagonal(small.extract_kq(), dim1=1, dim2=2)).tolist() == [
        [1.0] * 6, [1.0] * 6, [-1.0] * 6, [-1.0] * 6]
    torch.testing.assert_close(small.wk[1], 1e-6 * torch.eye(6, dtype=torch.float64))
    for family in (MultiHeadSoftmax, MultiHeadLinear):      # one check serves both configs
        with pytest.raises(ValueError, match="even"):
            family(5, 3, init_mode="oppo_small_id")
    with pytest.raises(ValueError, match="activation"):
        MultiHeadSoftmax(5, 2, activation="relu")


def test_records_rebuild_the_model():
    model = MultiHeadSoftmax(4, 3, init_seed=7, activation="tanh")
    rebuilt = build_model(config_from_dict(config_to_dict(model.config)))
    assert np.array_equal(rebuilt.to_flat(), model.to_flat())


@pytest.mark.parametrize("activation", ["linear", "square", "tanh"])
def test_normalized_activations_match_their_definition(activation):
    model = MultiHeadSoftmax(D, 2, activation=activation, activation_c=0.7, init_seed=3)
    batch = _batch()
    z = torch.cat([batch.x, batch.y[..., None]], -1)
    z_q = torch.cat([batch.x_q, torch.zeros_like(batch.x_q[:, :1])], -1)
    s = torch.einsum("bli,hij,bj->bhl", z, model.extract_kq(), z_q)
    f = {"linear": 1 + 0.7 * s, "square": (1 + 0.7 * s) ** 2, "tanh": 1 + torch.tanh(s)}[activation]
    expect = torch.einsum("hi,bhl,bli->b", model.extract_ov(), f / f.sum(-1, keepdim=True), z)
    torch.testing.assert_close(model(batch.x, batch.y, batch.x_q), expect, rtol=1e-12, atol=1e-12)
