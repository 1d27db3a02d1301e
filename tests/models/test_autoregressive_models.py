"""The autoregressive models (Sander et al. 2024) against their literal formulas: DIAG's Lemma 2
reduction C = BᵀA against the head-by-head Eq. 6, AUG-1 under Assumption 2 against Eq. 4 with full
3d × 3d matrices, Prop. 1's construction (one GD step), PE-only as DIAG with C = I, and the
real-coordinate trigonometric predictor of Lemma 3 / Fig. 2."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastattn.configs import unflatten
from fastattn.models import (
    ARAugmented,
    ARAugmentedLayers,
    ARDiag,
    ARPEOnly,
    ARTransformer,
    NonAugmented,
    build_model,
    config_from_dict,
    config_to_dict,
)
from fastattn.models import reference as ref
from fastattn.tasks import AutoRegressive
from fastattn.theory import sander2024 as th


@pytest.mark.parametrize("dist,rep", [("unitary", "complex"), ("orthogonal", "complex"),
                                      ("haar", "real")])
def test_diag_lemma2_equals_the_multi_head_forward(dist, rep):
    d, H, tmax = 4, 3, 6
    model = ARDiag(d, H, tmax, init_scale=0.7, init_seed=4)
    tokens = AutoRegressive(dim=d, context=tmax, context_dist=dist, representation=rep).sample(8, 1).tokens
    with torch.no_grad():
        fast = model.predict(tokens)
        for T in range(2, tmax + 1):
            literal = ref.ar_diag_heads(tokens, model.A, model.B, model.P, T)
            torch.testing.assert_close(fast[:, T - 2], literal, rtol=0, atol=1e-12)


def test_pe_only_is_diag_with_identity_C():
    d, tmax = 2, 5
    pe = ARPEOnly(d, 1, tmax, init_scale=1.0, init_seed=0)
    diag = ARDiag(d, d, tmax)
    with torch.no_grad():
        diag.A.copy_(torch.eye(d))
        diag.B.copy_(torch.eye(d))
        diag.P.copy_(pe.P)
    tokens = AutoRegressive(dim=d, context=tmax).sample(4, 0).tokens
    with torch.no_grad():
        torch.testing.assert_close(pe.predict(tokens), diag.predict(tokens), rtol=0, atol=1e-13)


def _full_weights(model: ARAugmented, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Assumption 2's A, B `[3d, 3d]` from the six scalars."""
    a, b = model.a.detach(), model.b.detach()
    eye = torch.eye(d, dtype=torch.float64)
    A = torch.zeros(3 * d, 3 * d, dtype=torch.float64)
    B = torch.zeros_like(A)
    A[d:2 * d, d:2 * d], A[d:2 * d, 2 * d:] = a[0] * eye, a[1] * eye
    A[2 * d:, d:2 * d], A[2 * d:, 2 * d:] = a[2] * eye, a[3] * eye
    B[:d, d:2 * d], B[:d, 2 * d:] = b[0] * eye, b[1] * eye
    return A, B


@pytest.mark.parametrize("rep,s0", [("complex", "zero"), ("complex", "backward"), ("real", "zero")])
def test_augmented_equals_eq4_with_full_matrices(rep, s0):
    d, tmax = 3, 6
    dist = "haar" if rep == "real" else "unitary"
    model = ARAugmented(d, 1, init_scale=1.0, init_seed=2)
    task = AutoRegressive(dim=d, context=tmax, context_dist=dist, representation=rep,
                          encoding="augmented", s0=s0)
    tokens = task.sample(8, 0).tokens
    A, B = _full_weights(model, d)
    with torch.no_grad():
        fast = model.predict(tokens)
    for T in range(2, tmax + 1):
        torch.testing.assert_close(fast[:, T - 2], ref.ar_augmented(tokens, A, B, T), rtol=0, atol=1e-12)


def test_prop1_construction_is_one_gd_step():
    """A3 = I, B1 = η I: T_θ(e_{1:T}) = η Σ_t s_t s_{t−1}* s_T = −η ∇L(0) s_T (s_0 = 0)."""
    d, tmax, eta = 3, 7, 0.3
    model = ARAugmented(d, 1)
    model.load_flat(np.array([0.0, 0.0, 1.0, 0.0, eta, 0.0]))
    batch = AutoRegressive(dim=d, context=tmax, encoding="augmented").sample(5, 0)
    s = batch.states.numpy()
    with torch.no_grad():
        out = model.predict(batch.tokens).numpy()
    for T in range(2, tmax + 1):
        grad = -sum(np.einsum("ni,nj->nij", s[:, t + 1], s[:, t].conj()) for t in range(T - 1))
        want = np.einsum("nij,nj->ni", -eta * grad, s[:, T - 1])
        np.testing.assert_allclose(out[:, T - 2], want, atol=1e-12)


def test_prop2_optimum_reaches_its_loss_by_monte_carlo():
    """a3 b1 = η* (others 0) has sampled loss ℓ* of Prop. 2 in both s_0 conventions (d = 5,
    T_max = 50: 76.0 and 79.46), within 4 standard errors."""
    d, tmax, n = 5, 50, 2000
    for s0 in ("backward", "zero"):
        eta, loss = th.augmented_optimum(d, tmax, s0)
        model = ARAugmented(d, 1).load_flat(np.array([0.0, 0.0, 1.0, 0.0, eta, 0.0]))
        batch = AutoRegressive(dim=d, context=tmax, encoding="augmented", s0=s0).sample(n, 0)
        with torch.no_grad():
            per = (model.predict(batch.tokens) - batch.targets).abs().square().sum((1, 2)).numpy()
        assert abs(per.mean() - loss) < 4 * per.std(ddof=1) / np.sqrt(n)
    assert th.augmented_optimum(5, 50, "backward") == pytest.approx((1274 / 48020, 76.0))
    assert th.augmented_optimum(5, 50, "zero")[0] == pytest.approx(3 / 111)


def test_lemma3_real_coordinates_and_the_trig_identity(rng):
    """Fig. 2: 2cos θ R_θ − I = R_{2θ}; on real rotation sequences 2cos θ s_T − s_{T−1} = s_{T+1}."""
    theta = rng.uniform(0, 2 * np.pi, 9)
    R = th.rotation(theta)
    lhs = 2 * np.cos(theta)[:, None, None] * R - np.eye(2)
    np.testing.assert_allclose(lhs, th.rotation(2 * theta), atol=1e-14)
    batch = AutoRegressive(dim=2, context=6, context_dist="orthogonal", representation="real").sample(9, 0)
    s = batch.states.numpy()
    cos = batch.W[:, 0, 0].numpy()
    np.testing.assert_allclose(2 * cos[:, None, None] * s[:, 1:-1] - s[:, :-2], s[:, 2:], atol=1e-13)


def test_configs_layouts_and_records():
    for model in (ARDiag(3, 2, 5), ARPEOnly(1, 1, 4), ARAugmented(2, 1), ARAugmentedLayers(2, 1, 2),
                  ARAugmentedLayers(2, 1, 2, softmax=True), ARTransformer(3, 5, 2)):
        again = build_model(config_from_dict(config_to_dict(model.config)))
        np.testing.assert_array_equal(again.to_flat(), model.to_flat())
        blocks = unflatten(model.config, model.to_flat())
        for name in model.PARAM_ORDER:
            np.testing.assert_array_equal(blocks[name], getattr(model, name).detach().numpy())
    with pytest.raises(ValueError, match="context"):
        ARDiag(3, 2, 1)


def test_augmented_layers_equal_the_position_by_position_reference():
    d, tmax, L = 2, 5, 2
    model = ARAugmentedLayers(d, 1, L, init_seed=3)
    with torch.no_grad():
        model.ln_w.add_(0.3 * torch.randn(model.ln_w.shape, dtype=torch.float64))
        model.ln_b.add_(0.3 * torch.randn(model.ln_b.shape, dtype=torch.float64))
    task = AutoRegressive(dim=d, context=tmax, context_dist="haar", representation="real",
                          encoding="augmented", s1="unit")
    tokens = task.sample(4, 0).tokens
    params = {n: getattr(model, n).detach() for n in model.PARAM_ORDER}
    with torch.no_grad():
        fast = model.predict(tokens)
    literal = ref.ar_augmented_layers(tokens, params, L)
    torch.testing.assert_close(fast, literal[:, 1:, :d], rtol=0, atol=1e-12)
    with torch.no_grad():
        assert torch.isfinite(task.loss(model, task.sample(8, 1)))


@pytest.mark.parametrize("lookahead,duplicate,init_same", [(False, 2, False), (True, 1, True),
                                                           (False, 1, True)])
def test_non_augmented_equals_the_per_position_formula_values_and_gradients(lookahead, duplicate,
                                                                           init_same):
    """NONAUG-§6 (spec §3.6) against the authors' formula written position by position (float64):
    predictions and the gradient of every parameter, at odd sizes."""
    d, H, tmax = 3, 2, 5
    model = NonAugmented(d, H, duplicate=duplicate, lookahead=lookahead, init_same=init_same,
                         init_seed=2)
    with torch.no_grad():
        model.ln_w.add_(0.3 * torch.randn(model.ln_w.shape, dtype=torch.float64))
        model.ln_b.add_(0.3 * torch.randn(model.ln_b.shape, dtype=torch.float64))
    task = AutoRegressive(dim=d, context=tmax, context_dist="haar", representation="real",
                          duplicate=duplicate, s1="unit")
    batch = task.sample(4, 0)
    params = {n: getattr(model, n) for n in model.PARAM_ORDER}
    literal = ref.ar_non_augmented(batch.tokens, params, int(lookahead))
    literal = (literal[:, :-1] if lookahead else literal[:, 1:]).repeat(1, 1, duplicate)
    fast = model.predict(batch.tokens)
    torch.testing.assert_close(fast, literal, rtol=0, atol=1e-12)
    weights = torch.randn(fast.shape, dtype=torch.float64)
    g_fast = torch.autograd.grad((fast * weights).sum(), list(params.values()))
    g_lit = torch.autograd.grad((literal * weights).sum(), list(params.values()))
    for name, a, b in zip(params, g_fast, g_lit, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-11, msg=name)
    assert torch.isfinite(task.loss(model, batch))


def test_non_augmented_init_records_and_errors():
    model = NonAugmented(5, 4, duplicate=2, init_same=True, init_seed=1)
    again = build_model(config_from_dict(config_to_dict(model.config)))
    np.testing.assert_array_equal(again.to_flat(), model.to_flat())
    blocks = unflatten(model.config, model.to_flat())
    for name in model.PARAM_ORDER:
        np.testing.assert_array_equal(blocks[name], getattr(model, name).detach().numpy())
    spread = (model.Wq - model.Wq.mean(0)).std().item()          # heads = one init + 0.05·N(0, 1)
    assert 0.03 < spread < 0.07 and NonAugmented(5, 4, duplicate=2).Wq.std().item() > 0.15
    assert model.head_maps().shape == (4, 10, 10)
    with pytest.raises(ValueError, match="lookahead must be True"):
        NonAugmented(3, 2, lookahead="yes")
    tokens = AutoRegressive(dim=3, context=4, context_dist="haar", representation="real").sample(2, 0)
    with pytest.raises(ValueError, match="duplicate"):
        NonAugmented(3, 2, duplicate=2).predict(tokens.tokens)
@pytest.mark.parametrize("kind", ["linear", "softmax", "mlp", "softmax+mlp"])
def test_app_b_variants_equal_the_reference_with_gradients(kind):
    """App. B's {linear, softmax} × {no MLP, MLP} (spec §3.7) at odd sizes (d = 3, T = 7, L = 3,
    MLP width 5), float64: forward and every parameter's gradient equal the position-by-position
    reference (explicit exp/sum softmax, ReLU MLP, layer norm)."""
    d, tmax, L, m = 3, 7, 3, 5
    softmax = "softmax" in kind
    model = (ARTransformer(d, m, L, softmax=softmax, init_seed=5) if "mlp" in kind
             else ARAugmentedLayers(d, 1, L, softmax=softmax, init_seed=5))
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():                         # move the norms off their identity init
        for name in model.PARAM_ORDER:
            if name.startswith("ln"):
                getattr(model, name).add_(0.3 * torch.randn(getattr(model, name).shape,
                                                            generator=g, dtype=torch.float64))
    task = AutoRegressive(dim=d, context=tmax, context_dist="haar", representation="real",
                          encoding="augmented", s1="unit")
    batch = task.sample(5, 0)
    fast_loss = task.loss(model, batch)
    fast_grads = torch.autograd.grad(fast_loss, [getattr(model, n) for n in model.PARAM_ORDER])
    params = {n: getattr(model, n).detach().clone().requires_grad_(True) for n in model.PARAM_ORDER}
    literal = ref.ar_augmented_layers(batch.tokens, params, L, softmax=softmax)
    torch.testing.assert_close(model.outputs(batch.tokens), literal, rtol=0, atol=1e-12)
    ref_loss = (literal[:, 1:, :d] - batch.targets).square().sum(-1).mean(0).sum()
    ref_grads = torch.autograd.grad(ref_loss, [params[n] for n in model.PARAM_ORDER])
    for name, a, b in zip(model.PARAM_ORDER, fast_grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=name)


def test_app_b_transformer_gradient_matches_finite_differences():
    """The softmax + MLP model's autograd gradient against central differences (float64)."""
    model = ARTransformer(2, 3, 2, init_seed=2)
    task = AutoRegressive(dim=2, context=5, context_dist="haar", representation="real",
                          encoding="augmented", s1="unit")
    batch = task.sample(3, 0)
    theta = model.to_flat()

    def loss(flat):
        with torch.no_grad():
            return float(task.loss(model.load_flat(flat), batch))

    model.load_flat(theta)
    grad = torch.cat([g.reshape(-1) for g in torch.autograd.grad(
        task.loss(model, batch), [getattr(model, n) for n in model.PARAM_ORDER])]).numpy()
    idx = np.random.default_rng(0).choice(theta.size, 25, replace=False)
    h = 1e-6
    for i in idx:
        e = np.zeros_like(theta)
        e[i] = h
        fd = (loss(theta + e) - loss(theta - e)) / (2 * h)
        assert fd == pytest.approx(grad[i], rel=1e-6, abs=1e-8), i


def test_softmax_attention_rows_are_convex_combinations():
    """Softmax weights sum to 1 over t' ≤ t: a constant value (W_v = 0, v = b_v) gives the
    attention output W_O b_v + b_O at every position, whatever the scores."""
    model = ARAugmentedLayers(2, 1, 1, softmax=True, init_seed=0)
    with torch.no_grad():
        model.Wv.zero_()
    x = AutoRegressive(dim=2, context=6, context_dist="haar", representation="real",
                       encoding="augmented", s1="unit").sample(4, 0).tokens
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    out = model._attention(x, 0, causal)
    expected = model.bv[0] @ model.Wo[0].T + model.bo[0]
    torch.testing.assert_close(out, expected.expand_as(out), rtol=0, atol=1e-13)


def test_app_b_flags_are_checked():
    with pytest.raises(ValueError, match="softmax"):
        ARAugmentedLayers(2, 1, 1, softmax="yes")
    with pytest.raises(ValueError, match="layers"):
        ARTransformer(2, 4, 0)


def test_eq6_layout_init_and_errors():
    """`eq6` (App. B, Fig. 9): A, B `[H, d, d]`, P `[T_max, T_max]` and the MLP's four blocks, empty
    without an MLP; A, B, P ~ init_scale·N(0, 1) from the seed; bad fields and complex tokens are
    refused naming the fix."""
    from fastattn.models import Eq6, Eq6Config

    plain, mlp = Eq6(2, 3, context=5), Eq6(2, 3, context=5, mlp_width=4, init_scale=0.1)
    assert plain.flat_size() == 2 * 3 * 4 + 25
    assert mlp.flat_size() == 2 * 3 * 4 + 25 + (4 * 2 + 4) + (2 * 4 + 2)
    g = torch.Generator().manual_seed(0)
    np.testing.assert_array_equal(mlp.A.detach().numpy(),
                                  (0.1 * torch.randn(3, 2, 2, generator=g, dtype=torch.float64)).numpy())
    np.testing.assert_array_equal(Eq6(2, 3, context=5).to_flat(), plain.to_flat())
    with pytest.raises(ValueError, match="mlp_width must be a non-negative integer"):
        Eq6Config(2, 3, mlp_width=-1)
    with pytest.raises(ValueError, match="softmax must be True or False"):
        Eq6Config(2, 3, softmax="yes")
    with pytest.raises(ValueError, match="representation='real'"):
        plain.predict(torch.zeros(1, 5, 2, dtype=torch.complex128))
