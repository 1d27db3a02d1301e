"""Per-head QK / OV extraction and their measures on constructed weights with known answers
(spec §8.6, §13.10)."""

import numpy as np
import pytest
import torch

from fastattn.analysis.heads import (
    extract_ov,
    extract_qk,
    factored_svd,
    head_measures,
    ov_factors,
)
from fastattn.models.transformer import Transformer


def _constructed_state() -> dict[str, torch.Tensor]:
    """One layer, two heads, d = 4, d_head = 2, in TransformerLens' names (a plain state dict):
    head 0: QK = 3 e1 e3ᵀ + 2 e2 e4ᵀ, OV = 5 e4 e1ᵀ; head 1: QK = e1 e1ᵀ, OV = 0."""
    wq, wk, wv, wo = torch.zeros(2, 4, 2), torch.zeros(2, 4, 2), torch.zeros(2, 4, 2), torch.zeros(2, 2, 4)
    wq[0, 0, 0], wq[0, 1, 1] = 1.0, 2.0
    wk[0, 2, 0], wk[0, 3, 1] = 3.0, 1.0
    wv[0, 3, 0] = 5.0
    wo[0, 0, 0] = 1.0
    wq[1, 0, 0], wk[1, 0, 0] = 1.0, 1.0
    return {"blocks.0.attn.W_Q": wq, "blocks.0.attn.W_K": wk, "blocks.0.attn.W_V": wv,
            "blocks.0.attn.W_O": wo}


def test_extract_on_constructed_weights():
    e = np.eye(4)
    qk, ov = extract_qk(_constructed_state()), extract_ov(_constructed_state())
    assert qk.shape == ov.shape == (1, 2, 4, 4)
    np.testing.assert_array_equal(qk[0, 0], 3 * np.outer(e[0], e[2]) + 2 * np.outer(e[1], e[3]))
    np.testing.assert_array_equal(qk[0, 1], np.outer(e[0], e[0]))
    np.testing.assert_array_equal(ov[0, 0], 5 * np.outer(e[3], e[0]))
    np.testing.assert_array_equal(ov[0, 1], 0)


def test_extract_from_model_matches_its_attention():
    """QK and OV of the model's own weights reproduce its attention scores and head outputs."""
    model = Transformer(vocab=5, n_ctx=4, n_layers=2, n_heads=3, d_model=6, d_head=2,
                        dtype="float64", attn_scale=False)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    qk, ov = extract_qk(model), extract_ov(model)
    attn = model.blocks[1].attn
    for h in range(3):
        scores = (x @ attn.W_Q[h]) @ (x @ attn.W_K[h]).T
        np.testing.assert_allclose(x.numpy() @ qk[1, h] @ x.numpy().T, scores.detach(), atol=1e-12)
        np.testing.assert_allclose(x.numpy() @ ov[1, h], (x @ attn.W_V[h] @ attn.W_O[h]).detach(),
                                   atol=1e-12)
    assert np.linalg.matrix_rank(ov[0, 0]) <= 2


def test_extract_names_the_missing_parameter():
    with pytest.raises(ValueError, match=r"blocks\.0\.attn\.W_Q"):
        extract_qk({"embed.W_E": torch.zeros(3, 3)})


def test_factored_svd_matches_dense():
    g = np.random.default_rng(0)
    x, y = g.standard_normal((3, 9, 4)), g.standard_normal((3, 9, 4))
    u, s, v = factored_svd(x, y)
    m = x @ np.swapaxes(y, -1, -2)
    np.testing.assert_allclose(s, np.linalg.svd(m, compute_uv=False)[..., :4], rtol=1e-10)
    np.testing.assert_allclose(u * s[..., None, :] @ np.swapaxes(v, -1, -2), m, atol=1e-10)
    _, s_ov, _ = factored_svd(*ov_factors(_constructed_state()))
    np.testing.assert_allclose(s_ov[0], [[5, 0], [0, 0]], atol=1e-12)


def test_head_measures_known_answers():
    """Effective rank of σ = (3, 2): exp(H(0.6, 0.4)); SubDist 0 for M(t) = A M(∞) with A
    invertible; 1/√2 when M(t)'s row space keeps e1 but swaps e2 for e3; Variant B drops the
    earliest-converging mode."""
    e = np.eye(4)
    final = np.diag([1.0, 1.0, 0.0, 0.0])
    a = np.array([[2.0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 3]])
    ramp = np.linspace(0.1, 1.0, 5)
    mats = np.zeros((5, 1, 3, 4, 4))
    mats[:, 0, 0] = a @ final                                       # same row space throughout
    mats[-1, 0, 0] = final
    mats[:, 0, 1] = np.outer(e[0], e[0]) + np.outer(e[1], e[2])     # row space {e1, e3}
    mats[-1, 0, 1] = final
    # head 2: mode 1 converges at once, mode 2 ramps up: c(t) = (1, ramp)
    mats[:, 0, 2] = np.einsum("t,ij->tij", np.ones(5), np.outer(e[0], e[0])) + \
        np.einsum("t,ij->tij", ramp, 2 * np.outer(e[1], e[1]))
    m = head_measures(mats, np.arange(1.0, 6.0), kmax=1)
    np.testing.assert_allclose(m["subdist"][:-1, 0, 0], 0, atol=1e-12)
    np.testing.assert_allclose(m["subdist"][:-1, 0, 1], 1 / np.sqrt(2), rtol=1e-12)
    assert m["subdist"][-1].max() < 1e-12
    p = np.array([0.6, 0.4])
    three_two = np.zeros((1, 1, 1, 4, 4))
    three_two[0, 0, 0, :2, :2] = np.diag([3.0, 2.0])
    np.testing.assert_allclose(head_measures(three_two, np.ones(1), 0)["effective_rank"],
                               np.exp(-(p * np.log(p)).sum()), rtol=1e-12)
    c = np.stack([np.ones(5), 2 * ramp], 1)                         # head 2's mode components
    q = c / c.sum(1, keepdims=True)
    np.testing.assert_allclose(m["mer_mode"][:, 0, 2, 0], np.exp(-(q * np.log(q)).sum(1)), rtol=1e-12)
    np.testing.assert_allclose(m["mer_mode"][:, 0, 2, 1], 1.0, rtol=1e-12)   # mode 1 removed
    # Variant A drops the largest: σ = (max(1, 2r), min(1, 2r)) → k = 1 leaves one value
    np.testing.assert_allclose(m["mer_magnitude"][:, 0, 2, 1], 1.0, rtol=1e-12)
