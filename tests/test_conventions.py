"""docs/conventions.md, enforced: one test per rule of the sheet."""

import numpy as np
import torch

from fastattn.models import CubicMLP, MergedKQ, SeparateKQ, cubic_feature
from fastattn.models import reference as ref
from fastattn.tasks import LinearRegression


def test_tokens_are_rows_with_the_query_last_and_its_label_zero():
    b = LinearRegression(3, context=4).sample(2, 0)
    assert b.tokens.shape == (2, 5, 4)
    torch.testing.assert_close(b.tokens[:, :4, :3], b.x)
    torch.testing.assert_close(b.tokens[:, :4, 3], b.y)
    torch.testing.assert_close(b.tokens[:, 4, :3], b.x_q)
    assert torch.all(b.tokens[:, 4, 3] == 0)


def test_context_is_normalised_by_n_not_n_plus_one():
    """Repeating the context twice (N → 2N) leaves the prediction unchanged only under 1/N."""
    b = LinearRegression(3, context=5).sample(4, 0)
    m = MergedKQ(3, 2, init_scale=1.0)
    once = m(b.x, b.y, b.x_q)
    twice = m(torch.cat([b.x, b.x], 1), torch.cat([b.y, b.y], 1), b.x_q)
    torch.testing.assert_close(once, twice)
    literal = ref.query_readout(ref.linear_attention(ref.token_matrix(b.tokens),
                                                     *m.full_weights(), n=5))
    torch.testing.assert_close(once, literal)


def test_flat_parameter_layouts():
    d, h, r = 3, 2, 2
    m = MergedKQ(d, h)
    flat = m.to_flat()
    assert flat.shape == (h * (1 + d * d),)
    np.testing.assert_array_equal(flat[:h], m.v.detach().numpy())
    np.testing.assert_array_equal(flat[h:].reshape(h, d, d), m.U.detach().numpy())
    s = SeparateKQ(d, h, r)
    flat = s.to_flat()
    assert flat.shape == (h * (1 + 2 * r * d),)
    np.testing.assert_array_equal(flat[h:h + h * r * d].reshape(h, r, d), s.K.detach().numpy())
    np.testing.assert_array_equal(flat[h + h * r * d:].reshape(h, r, d), s.Q.detach().numpy())
    mlp = CubicMLP(d, h).load_flat(m.to_flat())
    torch.testing.assert_close(mlp.W1.reshape(h, d, d), m.U)


def test_cubic_feature_is_row_major():
    b, xq = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    z = cubic_feature(b, xq)
    assert z[1, 1 * 3 + 2] == b[1, 1] * xq[1, 2]


def test_eigenvalues_are_descending_and_eigvecs_are_columns():
    t = LinearRegression(3, spectrum=[0.1, 0.5, 0.2], rotate=True, rotation_seed=4)
    np.testing.assert_array_equal(t.eigvals, [0.5, 0.2, 0.1])
    np.testing.assert_allclose(t.cov_matrix @ t.eigvecs[:, 0], 0.5 * t.eigvecs[:, 0])


def test_every_model_matches_the_one_flat_layout():
    """The family cards (fastattn.configs) are the single definition of the flat order that the C++
    core reads: every model's PARAM_ORDER tensors have the card's shapes."""
    from fastattn import configs as layout
    from fastattn.configs.build import model_config
    from fastattn.models import MODELS, build_model

    d, h, r = 4, 2, 2
    for name, family in MODELS.items():
        card = layout.model_card(name)
        if card.shapes is None:             # the token transformer: its own flat order
            continue
        task = type("Task", (), {"dim": d, "context": 5, "duplicate": 2, "outputs": 2})()
        values = {"kind": name} | ({"heads": h} if "heads" in {f.name for f in card.fields} else {})
        m = build_model(model_config(values | ({"rank": r} if "separate" in name else {}), task))
        assert m.kind == name and isinstance(m, family.model)
        dims = m.dims
        shapes = layout.param_shapes(name, dims)
        assert [(n, tuple(getattr(m, n).shape)) for n in m.PARAM_ORDER] == list(shapes)
        blocks = layout.unflatten(name, m.to_flat(), dims)
        for n, _ in shapes:
            np.testing.assert_array_equal(blocks[n], getattr(m, n).detach().numpy())
