"""The multi-output softmax model of He et al. 2025 (spec §1.9) against the literal formula."""

import numpy as np
import pytest
import torch

from fastattn.models import MultiHeadSoftmax, MultiOutputSoftmax
from fastattn.models import reference as ref
from fastattn.models.predictors import MultiTaskKernel
from fastattn.tasks import MultiTaskRegression

d, N, L, H = 3, 2, 7, 3
SUPPORTS = ((0, 1), (1, 2))


def _batch(b=5, seed=0):
    return MultiTaskRegression(d, SUPPORTS, context=L).fixed_dataset(b, seed)


def _literal(model, batch, g):
    """ŷ_q from TF(Z) = Z + Σ_h OV^(h) Z smax∘msk(Zᵀ KQ^(h) Z) on the (d+N)×(L+1) matrix, with
    random OV rows above the last N (they must not matter)."""
    z = torch.cat([torch.cat([batch.x, batch.y], -1),
                   torch.cat([batch.x_q, torch.zeros_like(batch.y_q)], -1)[:, None]], 1)
    last = model.extract_ov()                                           # [H, N, D]
    rows = torch.randn(H, d, d + N, generator=g, dtype=torch.float64)
    out = ref.multihead_softmax_attention(z.transpose(1, 2), torch.cat([rows, last], 1),
                                          model.extract_kq())
    return out[:, -N:, -1]


def test_equals_the_paper_formula_and_its_gradients():
    g = torch.Generator().manual_seed(0)
    model = MultiOutputSoftmax(d, H, outputs=N, init_seed=3)
    batch = _batch(b=9)
    torch.testing.assert_close(model(batch.x, batch.y, batch.x_q), _literal(model, batch, g),
                               rtol=1e-12, atol=1e-12)
    loss = ((model(batch.x, batch.y, batch.x_q) - batch.y_q) ** 2).mean()
    lit = ((_literal(model, batch, g) - batch.y_q) ** 2).mean()
    for a, b in zip(torch.autograd.grad(loss, list(model.parameters())),
                    torch.autograd.grad(lit, list(model.parameters())), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-13)


def test_patterned_model_is_the_multitask_kernel_sum():
    """KQ_11 = diag ω^(h), KQ_21 = 0, OV_21 = 0, OV_22 = diag μ^(h) gives §1.9's formula."""
    rng = np.random.default_rng(1)
    omega, mu = rng.normal(0, 0.5, (H, d)), rng.normal(0, 1, (H, N))
    D = d + N
    model = MultiOutputSoftmax(d, H, outputs=N)
    with torch.no_grad():
        wq = torch.zeros(H, D, D, dtype=torch.float64)
        wq[:, :d, :d] = torch.diag_embed(torch.from_numpy(omega)) * np.sqrt(D)
        model.wq.copy_(wq)
        model.wk.copy_(torch.eye(D, dtype=torch.float64).expand(H, D, D))
        model.wv.copy_(torch.eye(D, dtype=torch.float64).expand(H, D, D))
        wo = torch.zeros(H, N, D, dtype=torch.float64)
        wo[:, :, d:] = torch.diag_embed(torch.from_numpy(mu))
        model.wo.copy_(wo)
    batch = _batch()
    torch.testing.assert_close(model(batch.x, batch.y, batch.x_q),
                               MultiTaskKernel(omega, mu)(batch.x, batch.y, batch.x_q),
                               rtol=1e-12, atol=1e-12)


def test_one_output_is_the_single_task_model():
    single = MultiHeadSoftmax(d, 2, init_seed=5)
    multi = MultiOutputSoftmax(d, 2, outputs=1).load_flat(single.to_flat())
    batch = _batch()
    torch.testing.assert_close(multi(batch.x, batch.y[..., :1], batch.x_q)[:, 0],
                               single(batch.x, batch.y[..., 0], batch.x_q), rtol=1e-13, atol=1e-13)
    assert multi.flat_size() == 3 * 2 * (d + 1) ** 2 + 2 * (d + 1)


def test_shape_errors_name_the_argument():
    model = MultiOutputSoftmax(d, 2, outputs=N)
    batch = _batch()
    with pytest.raises(ValueError, match="y has shape"):
        model(batch.x, batch.y[..., 0], batch.x_q)
    with pytest.raises(ValueError, match="x_q"):
        model(batch.x, batch.y, batch.x_q[:, :2])
