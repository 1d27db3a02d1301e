"""The multi-layer softmax stack (He et al. 2025 spec §1.3) against the paper's layer formula
applied layer by layer (strict causal mask, residual), float64, odd sizes."""

import numpy as np
import pytest
import torch

from fastattn.models import MultiHeadSoftmax, MultiLayerSoftmax
from fastattn.models import reference as ref
from fastattn.tasks import LinearRegression

d, L, H = 3, 7, 2


def _batch(b=6):
    task = LinearRegression(d, context=L, spectrum=[1.0] * d, noise=0.1, w_cov=np.eye(d) / d)
    return task.fixed_dataset(b, 0)


def _literal(model, batch):
    Z = batch.tokens.transpose(1, 2)
    for layer in range(model.config.layers):
        kq, ov = model.circuits(layer)
        Z = ref.multihead_softmax_attention(Z, ov, kq)
    return torch.einsum("nd,bd->bn", model.readout, Z[:, :, -1])[:, 0]


@pytest.mark.parametrize("tied", [False, True])
def test_stack_equals_the_layer_formula_and_its_gradients(tied):
    model = MultiLayerSoftmax(d, H, layers=3, tied=tied, init_seed=2)
    batch = _batch()
    torch.testing.assert_close(model(batch.x, batch.y, batch.x_q), _literal(model, batch),
                               rtol=1e-12, atol=1e-12)
    loss = ((model(batch.x, batch.y, batch.x_q) - batch.y_q) ** 2).mean()
    lit = ((_literal(model, batch) - batch.y_q) ** 2).mean()
    for a, b in zip(torch.autograd.grad(loss, list(model.parameters())),
                    torch.autograd.grad(lit, list(model.parameters())), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-13)
    assert model.wq.shape[0] == (1 if tied else 3)


def test_one_layer_reading_y_is_the_single_query_model():
    single = MultiHeadSoftmax(d, H, init_seed=1)
    stack = MultiLayerSoftmax(d, H, layers=1, init_seed=3)
    with torch.no_grad():
        for name in ("wq", "wk", "wv"):
            getattr(stack, name)[0].copy_(getattr(single, name))
        stack.wo[0, :, -1].copy_(single.wo)             # the row of O that reaches ŷ
        stack.readout.copy_(torch.eye(d + 1, dtype=torch.float64)[-1:])
    batch = _batch()
    torch.testing.assert_close(stack(batch.x, batch.y, batch.x_q),
                               single(batch.x, batch.y, batch.x_q), rtol=1e-12, atol=1e-12)
