"""The fast β-form of every model equals the papers' literal formula on the full token matrix."""

import numpy as np
import pytest
import torch

from fastattn.models import (
    CubicMLP,
    MergedKQ,
    MergedKQFull,
    SeparateKQ,
    SoftmaxMergedKQ,
    SoftmaxSeparateKQ,
)
from fastattn.models import reference as ref
from fastattn.tasks import LinearRegression
from helpers import random_spd

SHAPES = [(1, 1, 1), (1, 4, 2), (3, 7, 3), (4, 31, 5), (5, 2, 1)]  # (D, N, H), odd N and D = 1


def _batch(rng, d, n, size=6):
    task = LinearRegression(d, context=n, cov=random_spd(rng, d), noise=0.3,
                            data_seed=int(rng.integers(10**6)))
    return task.sample(size, step=int(rng.integers(100)))


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach(), b.detach()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def _randomise(model, rng, scale=1.0):
    """Replace every parameter by fresh N(0, scale²) entries, zero blocks included."""
    g = torch.Generator().manual_seed(int(rng.integers(2**31)))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale)
    return model


@pytest.mark.parametrize(("d", "n", "h"), SHAPES)
def test_merged_matches_literal_formula(rng, d, n, h):
    b = _batch(rng, d, n)
    X = ref.token_matrix(b.tokens)
    for model in (MergedKQ, MergedKQFull):
        m = _randomise(model(d, h), rng)
        literal = ref.query_readout(ref.linear_attention(X, *m.full_weights(), n))
        assert _rel_err(m(b.x, b.y, b.x_q), literal) < 1e-12
        assert _rel_err(m(b.x, b.y, b.x_q, per_head=True).sum(-1), literal) < 1e-12


@pytest.mark.parametrize(("d", "n", "h"), SHAPES)
@pytest.mark.parametrize("rank", [1, 2])
def test_separate_matches_literal_formula(rng, d, n, h, rank):
    rank = min(rank, d)                        # a rank above D is refused (rank K_iᵀQ_i ≤ D)
    b = _batch(rng, d, n)
    m = _randomise(SeparateKQ(d, h, rank), rng)
    literal = ref.query_readout(
        ref.separate_linear_attention(ref.token_matrix(b.tokens), *m.full_weights(), n))
    assert _rel_err(m(b.x, b.y, b.x_q), literal) < 1e-12


@pytest.mark.parametrize(("d", "n", "h"), SHAPES)
def test_softmax_models_match_literal_formula(rng, d, n, h):
    b = _batch(rng, d, n)
    X = ref.token_matrix(b.tokens)
    scale = float(rng.uniform(0.3, 2.0))
    sm = _randomise(SoftmaxMergedKQ(d, h, scale=scale), rng)
    lin = MergedKQ(d, h).load_flat(sm.to_flat())
    literal = ref.query_readout(ref.softmax_attention(X, *lin.full_weights(), rho=1 / scale))
    assert _rel_err(sm(b.x, b.y, b.x_q), literal) < 1e-12
    ss = _randomise(SoftmaxSeparateKQ(d, h, min(2, d), scale=scale), rng)
    lin = SeparateKQ(d, h, min(2, d)).load_flat(ss.to_flat())
    literal = ref.query_readout(
        ref.separate_softmax_attention(X, *lin.full_weights(), rho=1 / scale))
    assert _rel_err(ss(b.x, b.y, b.x_q), literal) < 1e-12


def _literal_prefix_predictions(model, x, y, literal_fn):
    """Run the literal formula on every prefix: position n sees tokens 1..n-1 and queries x_n."""
    preds = []
    for n in range(1, x.shape[1]):
        tokens = torch.cat([torch.cat([x[:, :n], y[:, :n, None]], -1),
                            torch.cat([x[:, n:n + 1], torch.zeros_like(y[:, :1, None])], -1)], 1)
        preds.append(literal_fn(ref.token_matrix(tokens), n))
    return torch.stack(preds, 1)


@pytest.mark.parametrize(("d", "t", "h"), [(1, 3, 1), (3, 8, 2), (4, 6, 3)])
def test_next_token_predictions_match_literal_formula_on_prefixes(rng, d, t, h):
    b = _batch(rng, d, t)
    x, y = b.x, b.y
    for m in (_randomise(MergedKQ(d, h), rng), _randomise(MergedKQFull(d, h), rng)):
        w = m.full_weights()
        lit = _literal_prefix_predictions(
            m, x, y, lambda X, n, w=w: ref.query_readout(ref.linear_attention(X, *w, n)))
        assert _rel_err(m.predict_next_token(x, y), lit) < 1e-12
    s = _randomise(SeparateKQ(d, h, min(2, d)), rng)
    w = s.full_weights()
    lit = _literal_prefix_predictions(
        s, x, y, lambda X, n: ref.query_readout(ref.separate_linear_attention(X, *w, n)))
    assert _rel_err(s.predict_next_token(x, y), lit) < 1e-12
    sm = _randomise(SoftmaxMergedKQ(d, h), rng)
    w = MergedKQ(d, h).load_flat(sm.to_flat()).full_weights()
    lit = _literal_prefix_predictions(
        sm, x, y, lambda X, n: ref.query_readout(ref.softmax_attention(X, *w)))
    assert _rel_err(sm.predict_next_token(x, y), lit) < 1e-12


def test_random_lengths_match_literal_formula_per_sequence(rng):
    task = LinearRegression(3, context=[2, 5, 9], data_seed=int(rng.integers(1000)))
    b = task.sample(12, 0)
    for m in (_randomise(MergedKQ(3, 2), rng), _randomise(SoftmaxSeparateKQ(3, 2), rng)):
        got = m(b.x, b.y, b.x_q, lengths=b.lengths).detach()
        # rounding is relative to the summands, which are of the batch's output scale: a prediction
        # near 0 is their cancellation (seed 893: ŷ = 4.5e-4 off by 6.7e-16, 1.5e-12 of itself but
        # 3e-16 of the batch's largest |ŷ|, 2.2), so the bound is relative to that scale
        scale = got.abs().max()
        for i in range(len(b)):
            n = int(b.lengths[i])
            tokens = torch.cat([b.tokens[i:i + 1, :n], b.tokens[i:i + 1, -1:]], 1)
            want = m(*(t for t in (tokens[:, :-1, :-1], tokens[:, :-1, -1], tokens[:, -1, :-1])))
            assert float((got[i] - want.detach()).abs().max()) < 1e-12 * scale


def test_gamma_gives_the_prediction(rng):
    b = _batch(rng, 4, 9)
    for m in (MergedKQ(4, 3), SeparateKQ(4, 3, 2), CubicMLP(4, 3)):
        _randomise(m, rng)
        torch.testing.assert_close(m(b.x, b.y, b.x_q),
                                   torch.einsum("bd,de,be->b", b.beta, m.gamma(), b.x_q))


def test_merged_equals_cubic_mlp_outputs_and_sgd_trajectory(rng):
    """ATTN_M ≡ two-layer linear MLP on z = vec(β x_qᵀ) (Eq. 6-7): same function, same 100 SGD steps."""
    d, h = 4, 8
    task = LinearRegression(d, context=31, spectrum=[0.4, 0.3, 0.2, 0.1], rotate=True)
    attn = MergedKQ(d, h, init_scale=0.5, init_seed=int(rng.integers(1000)))
    start = attn.to_flat()
    mlp = CubicMLP(d, h).load_flat(start)
    opt_a = torch.optim.SGD(attn.parameters(), lr=0.05)
    opt_m = torch.optim.SGD(mlp.parameters(), lr=0.05)
    for step in range(100):
        b = task.sample(64, step)
        losses = []
        for model, opt in ((attn, opt_a), (mlp, opt_m)):
            opt.zero_grad()
            loss = ((b.y_q - model(b.x, b.y, b.x_q)) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert np.isclose(losses[0], losses[1], rtol=1e-12, atol=0)
    np.testing.assert_allclose(attn.to_flat(), mlp.to_flat(), rtol=1e-10, atol=1e-14)
    assert np.abs(attn.to_flat() - start).max() > 1e-3  # the trajectory went somewhere
