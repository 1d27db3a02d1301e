"""The disentangled transformer (Musat et al. 2025): fast forward ≡ literal Eq. 5–7, zero-init
gradients, strict-mask row 0, the 19 basis matrices, projection round trip, dead directions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastattn.analysis.pseudo_params import DEAD, embed, project, subspace_report
from fastattn.models.disentangled import (
    BASIS,
    NAMES,
    THREE_PARAM,
    DisentangledConfig,
    DisentangledTransformer,
    disentangled_forward,
    half_swap,
    pseudo_weights,
    weight_shapes,
)
from fastattn.models.reference import disentangled_transformer
from fastattn.tasks import InductionPairs


@pytest.mark.parametrize("mask", ["strict", "inclusive"])
@pytest.mark.parametrize("data", ["gaussian", "orthonormal"])
def test_fast_forward_equals_literal_reference(mask, data):
    g = torch.Generator().manual_seed(3)
    batch = InductionPairs(6, 3, data=data).sample(7, step=2)
    W = [0.3 * torch.randn(s, generator=g, dtype=torch.float64) for s in weight_shapes(6)]
    fast = disentangled_forward(batch.X, *W, mask)
    ref = disentangled_transformer(batch.X, *W, mask)
    torch.testing.assert_close(fast, ref, rtol=0, atol=1e-12)


def test_parameter_count_zero_init_and_strict_row_zero():
    D = 4
    model = DisentangledTransformer(dim=D)
    assert sum(p.numel() for p in model.parameters()) == 28 * D * D
    task = InductionPairs(D, 2, reduction="sum")
    loss = task.loss(model, task.sample(16))
    loss.backward()
    assert torch.all(model.W1.grad == 0) and torch.all(model.W2.grad == 0)
    assert model.W3.grad.abs().max() > 0
    # strict mask with large random weights: finite loss and gradient (row 0 has no key)
    big = DisentangledTransformer(dim=D, init_scale=3.0, init_seed=1)
    loss = task.loss(big, task.sample(4))
    loss.backward()
    assert torch.isfinite(loss) and all(torch.all(torch.isfinite(p.grad)) for p in big.parameters())


def test_basis_is_orthogonal_with_norm_d_and_projection_round_trips(rng):
    D = 6
    M = half_swap(D).numpy()
    np.testing.assert_array_equal(M @ M, np.eye(D))
    vecs = []
    for k in range(len(BASIS)):
        e = np.zeros(len(BASIS))
        e[k] = 1.0
        vecs.append(np.concatenate([w.ravel() for w in embed(e, D)]))
    gram = np.array(vecs) @ np.array(vecs).T
    np.testing.assert_array_equal(gram, D * np.eye(len(BASIS)))
    theta = rng.normal(size=19)
    np.testing.assert_allclose(project(*embed(theta, D)), theta, rtol=0, atol=1e-14)
    np.testing.assert_allclose(project(*embed(theta, D), unit=True), np.sqrt(D) * theta, atol=1e-13)
    rep = subspace_report(*embed(theta, D))
    assert max(rep["residual"]) < 1e-13 and rep["rho_total"] == pytest.approx(1.0, abs=1e-14)
    dense = [rng.normal(size=s) for s in weight_shapes(D)]
    assert subspace_report(*dense)["rho_total"] < 0.5


def test_three_param_model_is_the_restricted_full_model():
    D = 4
    theta = torch.tensor([0.7, -1.2, 0.9], dtype=torch.float64)
    m3 = DisentangledTransformer(dim=D, params="three_param")
    with torch.no_grad():
        m3.theta.copy_(theta)
    full = torch.zeros(19, dtype=torch.float64)
    full[[NAMES.index(n) for n in THREE_PARAM]] = theta
    X = InductionPairs(D, 2).sample(5).X
    torch.testing.assert_close(m3(X), disentangled_forward(X, *pseudo_weights(full, D)), rtol=0, atol=0)


@pytest.mark.parametrize("mask", ["strict", "inclusive"])
def test_query_side_positional_blocks_get_no_gradient(mask):
    """Dead directions (spec §5.4): W2 rows D:2D and W3 rows D:2D read the query's zero position."""
    D = 4
    model = DisentangledTransformer(dim=D, init_scale=0.5, init_seed=2, mask=mask)
    task = InductionPairs(D, 3)
    task.loss(model, task.sample(32)).backward()
    assert torch.all(model.W2.grad[D:2 * D] == 0) and torch.all(model.W3.grad[D:2 * D] == 0)
    assert model.W2.grad[:D].abs().max() > 0
    grad_theta = project(model.W1.grad, model.W2.grad, model.W3.grad)
    np.testing.assert_array_equal(grad_theta[[NAMES.index(n) for n in DEAD]], 0.0)


def test_bad_config_is_named():
    with pytest.raises(ValueError, match="even"):
        DisentangledConfig(5)
    with pytest.raises(ValueError, match="mask"):
        DisentangledConfig(4, mask="causal")
    with pytest.raises(ValueError, match="params"):
        DisentangledConfig(4, params="gram15")
