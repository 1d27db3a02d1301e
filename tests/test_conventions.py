"""docs/conventions.md, enforced: one test per rule of the sheet."""

import numpy as np
import pytest
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


#: the stand-in task's fields that model cards take (`from_task`) besides dim: T_max, k, outputs
TASK_SIZES = ("context", "duplicate", "outputs")
#: the sizes each integer field is tried at, one field at a time from BASE_SIZE
SIZES = (1, 2, 3, 4, 5)
BASE_SIZE = 3


def _size_fields(card) -> list[str]:
    """The integer fields of a model card that can set a shape: its own (seeds excluded), the task
    fields it takes, and dim."""
    from fastattn.configs.base import context_value

    own = [f.name for f in card.fields if f.parse in (int, context_value) and not f.name.endswith("seed")]
    return ["dim", *own, *(k for k in TASK_SIZES if k in card.from_task.values())]


def _build_at(name: str, sizes: dict):
    """The model `name` at `sizes` (its fields and the stand-in task's), or None where its config
    refuses them."""
    from fastattn.configs import model_card
    from fastattn.models import build_model
    from fastattn.training.build import model_config

    task = type("Task", (), {k: sizes.get(k, BASE_SIZE) for k in ("dim", *TASK_SIZES)})()
    card = model_card(name)
    own = {k: v for k, v in sizes.items() if k in {f.name for f in card.fields}}
    try:
        return build_model(model_config({"kind": name, **own}, task))
    except ValueError:
        return None


def _assert_one_layout(m) -> None:
    from fastattn import configs as layout

    shapes = layout.param_shapes(m.config)
    assert [(n, tuple(getattr(m, n).shape)) for n in m.PARAM_ORDER] == list(shapes), m.config
    assert m.flat_size() == layout.n_params(m.config)
    flat = np.arange(m.flat_size(), dtype=np.float64)
    m.load_flat(flat)
    blocks = layout.unflatten(m.config, m.to_flat())
    for n, _ in shapes:
        np.testing.assert_array_equal(blocks[n], getattr(m, n).detach().numpy())


def test_every_model_matches_the_one_flat_layout_at_every_size():
    """The family cards (fastattn.configs) are the single definition of the flat order that the C++
    core reads: every model's PARAM_ORDER tensors have the card's shapes, at its defaults and with
    each integer field (dim, heads, rank, layers, T_max, duplicate, outputs, ...) moved, one at a
    time, to several values (a shape wrong only at a non-default depth shows here)."""
    from fastattn import configs as layout
    from fastattn.models import MODELS

    for name, family in MODELS.items():
        card = layout.model_card(name)
        if card.shapes is None:             # the token transformers: their own flat order
            continue
        base = next(b for b in ({}, {"dim": 4}, {"dim": 2}) if _build_at(name, b) is not None)
        _assert_one_layout(_build_at(name, base))
        for field in _size_fields(card):
            built = [m for v in SIZES if (m := _build_at(name, base | {field: v})) is not None]
            assert len(built) >= 2, f"{name}: {field} builds at fewer than two of {SIZES}"
            for m in built:
                assert m.kind == name and isinstance(m, family.model)
                _assert_one_layout(m)


def test_objectives_read_the_models_flat_layout_at_non_default_sizes(rng):
    """Every registered exact objective, at random non-default sizes of its pair
    (tests/population/states.py), has the model's flat size, which is the card's."""
    from population.states import draw_states

    from fastattn import configs as layout
    from fastattn.population import registered_objectives

    for pair in registered_objectives():
        for state in draw_states(pair, rng):
            m = state.model
            _assert_one_layout(m)
            assert state.objective.size() == m.flat_size() == layout.n_params(m.config), str(state)


#: (D, H, R) the C++ linear objectives are checked at: none of them the presets' (4, 5, 1)
LINEAR_SIZES = ((3, 2, 2), (4, 5, 3), (4, 1, 1), (5, 3, 4))     # R <= D, R != D: K's [R, D] shows


def _exact_loss_reads_the_models_blocks(kind: str, D: int, H: int, R: int) -> bool:
    """The C++ objective (its own dims and offsets, `Dims::P`) at the model's flat vector has the
    loss of the model's own Γ (its tensors, not the flat vector): L = tr(ΛS) + σ² − 2 tr(Γ ΛSΛ) +
    tr(Γᵀ B Γ Λ) with B = E[ββᵀ] (docs/theory.md §1)."""
    from fastattn import population
    from fastattn.models import build_model, get_model

    task = LinearRegression(D, context=7, spectrum=np.arange(D, 0, -1) / D, rotate=True,
                            rotation_seed=1)
    family = get_model(kind)
    fields = {"rank": R} if kind == "separate" else {}
    model = build_model(family.config(D, H, init_scale=1.0, init_seed=D + H + R, **fields))
    m = task.moments()
    lam, S, B = np.asarray(m.cov), np.asarray(m.w_second), m.beta_second_moment()
    G = model.gamma().detach().numpy()
    own = np.trace(lam @ S) + m.noise - 2 * np.trace(G @ lam @ S @ lam) + np.trace(G.T @ B @ G @ lam)
    exact, _ = population.loss_and_grad(model.config, model.to_flat(), m)
    return bool(np.isclose(exact, own, rtol=1e-10, atol=1e-13))


def test_the_exact_objectives_read_the_card_layout_at_non_default_sizes():
    for kind in ("merged", "separate", "cubic_mlp"):
        for D, H, R in LINEAR_SIZES:
            assert _exact_loss_reads_the_models_blocks(kind, D, H, R), (kind, D, H, R)


def _transposed(c):
    """K laid out [H, D, R] instead of [H, R, D]: the same size P, so no count catches it."""
    return (("v", (c.heads,)), ("K", (c.heads, c.dim, c.rank)), ("Q", (c.heads, c.rank, c.dim)))


def _swapped(c):
    """Q's block before K's: the same shapes, so only the values can tell (Γ becomes Γᵀ)."""
    return (("v", (c.heads,)), ("Q", (c.heads, c.rank, c.dim)), ("K", (c.heads, c.rank, c.dim)))


@pytest.mark.parametrize(("wrong", "error"), [(_transposed, (AssertionError, RuntimeError,
                                                             ValueError)),
                                              (_swapped, AssertionError)])
def test_a_planted_wrong_layout_fails(monkeypatch, wrong, error):
    """A wrong separate card makes the layout test above fail: the model built from it no longer
    agrees with the C++ objective, which keeps its own offsets (or, transposed, Γ no longer
    builds)."""
    import dataclasses

    from fastattn.configs.base import MODEL_CARDS

    monkeypatch.setitem(MODEL_CARDS, "separate",
                        dataclasses.replace(MODEL_CARDS["separate"], shapes=wrong))
    with pytest.raises(error):
        test_the_exact_objectives_read_the_card_layout_at_non_default_sizes()


def test_one_name_per_concept_the_field_is_the_option_and_the_column():
    """A config field's name is its option (with dashes) and its sweep column (`Names`)."""
    from fastattn.configs import all_options, pairs
    from fastattn.sweep.options import family_options

    for o in all_options():
        assert o.field == "kind" or o.flag == "--" + o.field.replace("_", "-"), o.flag
    fields = {o.field for o in all_options()} | {"task", "model"}
    for task, models in pairs().items():
        for model in models:
            assert set(family_options(task, model)) <= fields, (task, model)
