import numpy as np
import pytest
import torch
from scipy import stats

from fastattn.configs import model_card
from fastattn.models import (
    MODELS,
    CubicMLP,
    MergedKQ,
    MergedKQFull,
    SeparateConfig,
    SeparateKQ,
    SoftmaxMergedKQ,
    SoftmaxSeparateKQ,
    build_model,
    config_from_dict,
    config_to_dict,
    get_model,
)
from fastattn.tasks import LinearRegression


def _antithetic(batch):
    """The batch and its mirror w → -w (y → -y): every odd moment of w vanishes exactly."""
    cat = lambda a, b: torch.cat([a, b])  # noqa: E731
    return cat(batch.x, batch.x), cat(batch.y, -batch.y), cat(batch.x_q, batch.x_q), \
        cat(batch.y_q, -batch.y_q)


def _zero_block_grads(model, x, y, x_q, y_q):
    model.zero_grad()
    ((y_q - model(x, y, x_q)) ** 2).mean().backward()
    d = model.config.dim
    return model.value.grad[:, d, :d], model.kq.grad[:, d, :d]   # v⃗_i and u_i


def test_zero_blocks_get_zero_gradient_and_stay_zero_for_pure_icl():
    d = 3
    task = LinearRegression(d, context=5, spectrum=[0.5, 0.3, 0.2], rotate=True)
    model = MergedKQFull(d, 4, init_scale=1.0, init_seed=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(100):
        x, y, x_q, y_q = _antithetic(task.sample(32, step))
        g_vvec, g_u = _zero_block_grads(model, x, y, x_q, y_q)
        assert g_vvec.abs().max() < 1e-13 and g_u.abs().max() < 1e-13
        opt.step()
    assert model.value[:, d, :d].abs().max() < 1e-13 and model.kq[:, d, :d].abs().max() < 1e-13
    assert (model.value[:, d, d] - MergedKQFull(d, 4, init_scale=1.0, init_seed=1)
            .value[:, d, d]).abs().max() > 1e-3


def test_zero_blocks_learn_with_a_fixed_task_fraction():
    d = 3
    task = LinearRegression(d, context=5, fixed_task_fraction=0.5)
    model = MergedKQFull(d, 4, init_scale=1.0)
    b = task.sample(512, 0)  # w* is not mirrored: the odd moments of w no longer vanish
    g_vvec, g_u = _zero_block_grads(model, b.x, b.y, b.x_q, b.y_q)
    assert g_vvec.abs().max() > 1e-3 and g_u.abs().max() > 1e-3


N_SEEDS = 400


@pytest.mark.parametrize(
    ("make", "blocks"),
    [
        (lambda s: MergedKQ(4, 8, init_scale=0.1, init_seed=s), {"v": 1.0, "U": 1.0}),
        (lambda s: CubicMLP(4, 8, init_scale=0.1, init_seed=s), {"w2": 1.0, "W1": 1.0}),
        (lambda s: SeparateKQ(4, 5, 2, init_scale=0.1, init_seed=s), {"v": 1.0, "K": 1.0, "Q": 1.0}),
    ],
)
def test_initialisation_norms_follow_appendix_c2(make, blocks):
    """App. C.2: each layer's squared norm has mean w_init² (entries N(0, w_init²/fan)).

    ‖layer‖² / (w_init²/n) ~ χ²(n) with n entries; over many seeds the mean of ‖layer‖²/w_init² is 1
    with standard error √(2/n)/√seeds; we allow 4 standard errors, and check χ² by a KS test.
    """
    norms = {name: [] for name in blocks}
    for s in range(N_SEEDS):
        m = make(s)
        for name in blocks:
            norms[name].append(float(getattr(m, name).detach().pow(2).sum()) / 0.1**2)
    for name, values in norms.items():
        n = getattr(make(0), name).numel()
        values = np.asarray(values)
        assert abs(values.mean() - 1.0) < 4 * np.sqrt(2 / n) / np.sqrt(N_SEEDS)
        assert stats.kstest(values * n, stats.chi2(n).cdf).pvalue > 1e-3


def test_init_is_seeded_and_schemes_differ():
    a, b = SeparateKQ(4, 5, init_seed=3), SeparateKQ(4, 5, init_seed=3)
    np.testing.assert_array_equal(a.to_flat(), b.to_flat())
    assert not np.array_equal(a.to_flat(), SeparateKQ(4, 5, init_seed=4).to_flat())
    code = MergedKQ(4, 8, init_scale=1.0, init_scheme="code")
    assert abs(float(code.U.detach().std()) - 1.0) < 0.15  # code: every entry N(0, w_init²)


def test_config_round_trip_rebuilds_the_same_model():
    for m in (MergedKQFull(3, 2, init_seed=5), SeparateKQ(3, 2, 3, init_seed=2),
              SoftmaxMergedKQ(3, 2, scale=0.5), CubicMLP(2, 3, dtype="float32"),
              SoftmaxSeparateKQ(3, 2, 2, scale=2.0, init_scheme="code")):
        twin = build_model(m.config)
        assert type(twin) is type(m) and twin.config == m.config and twin.kind == m.config.kind
        np.testing.assert_array_equal(twin.to_flat(), m.to_flat())
        again = build_model(config_from_dict(config_to_dict(m.config)))
        np.testing.assert_array_equal(again.to_flat(), m.to_flat())


def test_a_model_takes_its_config_or_the_config_fields():
    """`Model(config)` (nanoGPT's GPT(config)) equals the keyword form of README.md."""
    config = SeparateConfig(4, 5, 1, init_scale=1e-2, init_seed=3)
    a = SeparateKQ(config)
    b = SeparateKQ(dim=4, heads=5, rank=1, init_scale=1e-2, init_seed=3)
    c = SeparateKQ(4, 5, 1, init_scale=1e-2, init_seed=3)
    assert a.config == b.config == c.config and a.config is config
    np.testing.assert_array_equal(a.to_flat(), b.to_flat())
    np.testing.assert_array_equal(a.to_flat(), c.to_flat())
    assert (a.kind, a.config.dim, a.config.heads, a.config.rank) == ("separate", 4, 5, 1)


def test_every_registered_kind_builds_its_own_class():
    """The families the papers' manifests register are those their cards declare, and each
    builds its own class."""
    from fastattn import papers
    from fastattn.configs import MODEL_CARDS

    carded = {k for k, c in MODEL_CARDS.items() if c.paper.split(",")[0] in papers.names()}
    assert set(MODELS) == carded and {"separate", "three_param", "transformer"} <= carded
    from fastattn.training.build import build_default

    for kind, family in MODELS.items():
        if kind in ("disentangled", "gram19", "three_param", "standard_transformer", "transformer"):
            m = build_default(model_card(kind).tasks[0], kind)[1]       # no heads: from the card
        else:
            m = family.model(family.config(3, 1 if kind == "linear_transformer" else 2))
        assert m.kind == kind and get_model(kind) == family and type(m) is family.model
    assert MergedKQ(3, 2).PARAM_ORDER != MergedKQFull(3, 2).PARAM_ORDER  # never set per instance


def test_registry_and_config_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"model=.attention. is unknown.*separate"):
        get_model("attention")
    with pytest.raises(ValueError, match="model='x' is unknown"):
        config_from_dict({"kind": "x", "dim": 3, "heads": 2})
    with pytest.raises(ValueError, match="needs its 'kind'"):
        config_from_dict({"dim": 3, "heads": 2})
    with pytest.raises(ValueError, match=r"MergedConfig has no field\(s\) \['rank'\]"):
        config_from_dict({"kind": "merged", "dim": 3, "heads": 2, "rank": 2})
    with pytest.raises(TypeError, match=r"MergedKQ: .*.full.*fields dim, heads"):
        MergedKQ(3, 2, full=True)
    with pytest.raises(TypeError, match="MergedKQ takes a MergedConfig; got a SeparateConfig"):
        MergedKQ(SeparateConfig(3, 2))
    with pytest.raises(TypeError, match="model config"):
        build_model({"kind": "merged", "dim": 3, "heads": 2})


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: MergedKQ(0, 2), "dim"),
        (lambda: MergedKQ(2, 0), "heads"),
        (lambda: SeparateKQ(3, 2, rank=0), "rank"),
        (lambda: SeparateKQ(3, 2, rank=4), "rank=4 must be at most dim=3"),
        (lambda: SeparateKQ(3, 2, init_scale=float("nan")), "init_scale"),
        (lambda: MergedKQ(3, 2, init_scheme="xavier"), "init_scheme"),
        (lambda: SoftmaxMergedKQ(3, 2, scale=0.0), "scale"),
        (lambda: MergedKQ(3, 2).load_flat(np.zeros(5)), "flat parameters"),
        (lambda: MergedKQ(1, 1).load_flat(np.array([np.nan, 1.0])), "NaN"),
    ],
)
def test_bad_model_arguments_raise_value_error(make, needle):
    with pytest.raises(ValueError, match=needle):
        make()
