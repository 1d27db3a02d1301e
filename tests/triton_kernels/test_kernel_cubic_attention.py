"""cubic_hidden and single_query_attention kernels against float64 references; references against
literal formulas."""

from __future__ import annotations

import pytest
import torch

from fastattn.triton_kernels.cubic import kernel as CK
from fastattn.triton_kernels.cubic.reference import (
    cubic_hidden_backward_reference,
    cubic_hidden_reference,
    cubic_second_moments_reference,
)
from fastattn.triton_kernels.single_query_attention import kernel as AK
from fastattn.triton_kernels.single_query_attention.reference import (
    single_query_attention_backward_reference,
    single_query_attention_reference,
    single_query_attention_with_lse_reference,
)

DTYPES = [torch.float32, torch.float64]


def _randn(g, *shape):
    """float64 normals on the generator's device."""
    return torch.randn(*shape, generator=g, dtype=torch.float64, device=g.device)


def test_cubic_reference_matches_literal_feature(seed):
    g = torch.Generator().manual_seed(seed)
    b, d, h = 6, 3, 4
    beta, x_q, w1, y_q = _randn(g, b, d), _randn(g, b, d), _randn(g, h, d * d), _randn(g, b)
    z = torch.stack([torch.outer(beta[s], x_q[s]).flatten() for s in range(b)])  # literal z
    torch.testing.assert_close(cubic_hidden_reference(beta, x_q, w1), z @ w1.T)
    mom = cubic_second_moments_reference(beta, x_q, y_q, chunk=4)
    torch.testing.assert_close(mom["zz"], sum(torch.outer(zz, zz) for zz in z) / b)
    torch.testing.assert_close(mom["zy"].flatten(), (y_q[:, None] * z).mean(0))
    # Kronecker factors are exact for a single data point
    one = cubic_second_moments_reference(beta[:1], x_q[:1], y_q[:1])
    torch.testing.assert_close(torch.kron(one["beta_beta"], one["xq_xq"]), one["zz"])


@pytest.mark.parametrize("d", [3, 65])
def test_cubic_reference_backward_is_autograd_of_the_reference(d, seed):
    """The closed-form backward (the reference backend's, `fastattn.ops.cubic`) against autograd
    through the forward reference, float64; D = 65 takes the reference's einsum branch."""
    g = torch.Generator().manual_seed(seed)
    b = 4 if d == 3 else (1 << 24) // (d * d) + 1
    leaves = [_randn(g, b, d).requires_grad_(), _randn(g, b, d).requires_grad_(),
              _randn(g, 2, d * d).requires_grad_()]
    out = cubic_hidden_reference(*leaves)
    dout = _randn(g, *out.shape)
    for name, a, c in zip(["dbeta", "dx_q", "dW1"], torch.autograd.grad(out, leaves, dout),
                          cubic_hidden_backward_reference(dout, *leaves), strict=True):
        torch.testing.assert_close(c, a, rtol=1e-12, atol=1e-12, msg=name)


def test_attention_reference_matches_literal_softmax(seed):
    """The library's use: query U_h x_q, keys all tokens' x including the query column, values y
    with 0 in the query slot; softmax written out over the key index."""
    g = torch.Generator().manual_seed(seed)
    b, n, d, h, scale = 3, 5, 2, 2, 0.8
    x, y, x_q, u = _randn(g, b, n, d), _randn(g, b, n), _randn(g, b, d), _randn(g, h, d, d)
    keys = torch.cat([x, x_q[:, None]], 1)  # [B, N+1, D]
    vals = torch.cat([y, y.new_zeros(b, 1)], 1)[..., None]  # [B, N+1, 1]
    q = torch.einsum("hij,bj->bhi", u, x_q)
    ref = single_query_attention_reference(q, keys, vals, scale)
    for s in range(b):
        for i in range(h):
            scores = [scale * float(q[s, i] @ keys[s, m]) for m in range(n + 1)]
            top = max(scores)
            e = [torch.exp(torch.tensor(v - top, dtype=torch.float64)) for v in scores]
            lit = sum(e[m] * vals[s, m, 0] for m in range(n + 1)) / sum(e)
            torch.testing.assert_close(ref[s, i, 0], lit)



@pytest.mark.parametrize("per_head", [False, True], ids=["shared_keys", "per_head_keys"])
def test_attention_reference_backward_is_autograd_of_the_reference(per_head, seed):
    """The closed-form backward (the reference backend's, `fastattn.ops.attention`) against
    autograd through the forward reference, float64, at odd sizes; lse is the scores' log-sum-exp."""
    g = torch.Generator().manual_seed(seed)
    b, h, m, k, v, scale = 3, 5, 7, 3, 2, 0.7
    keys = _randn(g, b, h, m, k) if per_head else _randn(g, b, m, k)
    leaves = [t.requires_grad_() for t in (_randn(g, b, h, k), keys, _randn(g, b, m, v))]
    out, lse = single_query_attention_with_lse_reference(*leaves, scale)
    s = torch.einsum("bhk,bhmk->bhm" if per_head else "bhk,bmk->bhm", *leaves[:2]) * scale
    torch.testing.assert_close(lse, torch.log(torch.exp(s).sum(-1)), rtol=1e-12, atol=1e-12)
    dout = _randn(g, *out.shape)
    closed = single_query_attention_backward_reference(dout, *leaves, scale, out, lse)
    for name, a, c in zip(["dq", "dk", "dv"], torch.autograd.grad(out, leaves, dout), closed,
                          strict=True):
        torch.testing.assert_close(c, a, rtol=1e-12, atol=1e-12, msg=name)


CUBIC_CASES = [(1, 1, 1), (17, 5, 3), (33, 17, 2), (3, 64, 1),
               *(pytest.param(*c, marks=pytest.mark.cuda_only)
                 for c in [(4099, 33, 5), (65536, 64, 4), (1000, 48, 1), (70000, 3, 7)])]


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp64"])
@pytest.mark.parametrize("b,d,h", CUBIC_CASES, ids=str)
def test_cubic_kernel_forward_backward(b, d, h, dtype, device, seed, rms_close):
    g = torch.Generator(device).manual_seed(seed)
    leaves = [_randn(g, b, d).requires_grad_(), _randn(g, b, d).requires_grad_(),
              _randn(g, h, d * d).requires_grad_()]
    ref = cubic_hidden_reference(*leaves)
    dout = _randn(g, *ref.shape)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [t.detach().to(dtype) for t in leaves]
    rms_close("hidden", ref, CK.cubic_hidden_forward(*low), dtype)
    for name, a, c in zip(["dbeta", "dx_q", "dW1"], grads,
                          CK.cubic_hidden_backward(dout.to(dtype), *low), strict=True):
        rms_close(name, a, c, dtype)


#: (b, d, h): D at and above the tiled kernels' switch (32), odd, B over several 16-row blocks
CUBIC_TILED_CASES = [(37, 33, 3), (5, 64, 1), (70, 40, 2), (16, 32, 1),
                     *(pytest.param(*c, marks=pytest.mark.cuda_only)
                       for c in [(65537, 64, 4), (4099, 128, 3), (1000, 100, 5)])]


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("b,d,h", CUBIC_TILED_CASES, ids=str)
def test_cubic_tiled_kernel_against_broadcast_kernel_and_float64(b, d, h, device, seed,
                                                                 rms_close):
    """The tiled tl.dot kernels (float32) and the broadcast kernels on the same inputs, each
    against the float64 reference: outputs and the three gradients; the launcher picks the tiled
    ones exactly at float32 and D >= 32."""
    g = torch.Generator(device).manual_seed(seed)
    leaves = [_randn(g, b, d).requires_grad_(), _randn(g, b, d).requires_grad_(),
              _randn(g, h, d * d).requires_grad_()]
    ref = cubic_hidden_reference(*leaves)
    dout = _randn(g, *ref.shape)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [t.detach().float() for t in leaves]
    for tiled in (True, False):
        rms_close(f"hidden (tiled={tiled})", ref, CK.cubic_hidden_forward(*low, tiled=tiled),
                  torch.float32)
        for name, a, c in zip(["dbeta", "dx_q", "dW1"], grads,
                              CK.cubic_hidden_backward(dout.float(), *low, tiled=tiled),
                              strict=True):
            rms_close(f"{name} (tiled={tiled})", a, c, torch.float32)
    assert CK._use_tiled(d, torch.float32, None) and not CK._use_tiled(d, torch.float64, None)
    assert not CK._use_tiled(31, torch.float32, None)
    with pytest.raises(ValueError, match="tiled=True needs float32 inputs"):
        CK.cubic_hidden_forward(*(t.double() for t in low), tiled=True)


# (b, h, m, k, v, per_head, block_m)
ATTENTION_CASES = [
    (1, 1, 1, 1, 1, False, None), (17, 3, 33, 5, 1, False, 8), (5, 2, 17, 17, 3, True, 4),
    (33, 5, 6, 4, 2, False, None), (3, 1, 64, 64, 1, True, 16),
    *(pytest.param(*c, marks=pytest.mark.cuda_only) for c in [
        (64, 4, 4096, 128, 1, False, None), (37, 3, 1000, 100, 3, True, None),
        (1025, 5, 33, 64, 1, False, None), (8, 2, 4097, 16, 1, False, None),
        (19, 2, 300, 128, 128, False, None), (4099, 1, 7, 3, 1, True, None),
        (6, 3, 1000, 33, 2, False, 64)])]


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp64"])
@pytest.mark.parametrize("b,h,m,k,v,per_head,block_m", ATTENTION_CASES, ids=str)
def test_attention_kernel_forward_backward(b, h, m, k, v, per_head, block_m, dtype, device, seed,
                                           rms_close):
    g = torch.Generator(device).manual_seed(seed)
    kshape = (b, h, m, k) if per_head else (b, m, k)
    leaves = [_randn(g, b, h, k).requires_grad_(), _randn(g, *kshape).requires_grad_(),
              _randn(g, b, m, v).requires_grad_()]
    scale = 0.7 / k**0.5
    ref = single_query_attention_reference(*leaves, scale)
    dout = _randn(g, *ref.shape)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [t.detach().to(dtype) for t in leaves]
    out, lse = AK.single_query_attention_forward(*low, scale, block_m=block_m)
    rms_close("out", ref, out, dtype)
    tri = AK.single_query_attention_backward(dout.to(dtype), *low, scale, out, lse,
                                             block_m=block_m)
    for name, a, c in zip(["dq", "dk", "dv"], grads, tri, strict=True):
        rms_close(name, a, c, dtype)


# (b, h, m, k, v, block_m): shared keys, K >= 64 (the tiled kernel's range) and one below it
TILED_CASES = [(3, 5, 37, 67, 3, 16), (2, 1, 100, 64, 1, None), (2, 17, 20, 65, 18, 16),
               (1, 3, 1, 33, 1, None),
               *(pytest.param(*c, marks=pytest.mark.cuda_only) for c in [
                   (1025, 4, 1000, 64, 1, None), (67, 4, 4097, 128, 1, None),
                   (19, 2, 300, 128, 128, None), (5, 33, 77, 100, 65, None)])]


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("b,h,m,k,v,block_m", TILED_CASES, ids=str)
def test_attention_tiled_kernel_against_broadcast_kernel_and_float64(b, h, m, k, v, block_m,
                                                                     device, seed, rms_close):
    """The tiled tl.dot kernel (float32, shared keys) and the broadcast kernel on the same inputs,
    each against the float64 reference (outputs, lse, gradients), each backward reading its own
    forward's out and lse; the launcher picks the tiled one exactly at float32, shared keys,
    K >= 64."""
    g = torch.Generator(device).manual_seed(seed)
    leaves = [_randn(g, b, h, k).requires_grad_(), _randn(g, b, m, k).requires_grad_(),
              _randn(g, b, m, v).requires_grad_()]
    scale = 1.3 / k**0.5
    ref, lse_ref = single_query_attention_with_lse_reference(*leaves, scale)
    dout = _randn(g, *ref.shape)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [t.detach().float() for t in leaves]
    for tiled in (True, False):
        out, lse = AK.single_query_attention_forward(*low, scale, block_m=block_m, tiled=tiled)
        rms_close(f"out (tiled={tiled})", ref, out, torch.float32)
        rms_close(f"lse (tiled={tiled})", lse_ref, lse, torch.float32)
        tri = AK.single_query_attention_backward(dout.float(), *low, scale, out, lse,
                                                 block_m=block_m, tiled=tiled)
        for name, a, c in zip(["dq", "dk", "dv"], grads, tri, strict=True):
            rms_close(f"{name} (tiled={tiled})", a, c, torch.float32)
    assert AK._use_tiled(low[1], torch.float32, None) == (k >= 64)
    assert not AK._use_tiled(low[1].double(), torch.float64, None)
    assert not AK._use_tiled(low[1][:, None].expand(b, h, m, k), torch.float32, None)


def test_attention_tiled_refuses_what_it_cannot_run():
    q, k, v = torch.zeros(1, 2, 64, dtype=torch.float64), torch.zeros(1, 3, 64), torch.zeros(1, 3, 1)
    with pytest.raises(ValueError, match="tiled=True needs float32 keys shared by the heads"):
        AK.single_query_attention_forward(q, k.double(), v.double(), 1.0, tiled=True)
    with pytest.raises(ValueError, match="tiled=True needs float32 keys shared by the heads"):
        AK.single_query_attention_forward(q.float(), k[:, None].expand(1, 2, 3, 64), v, 1.0,
                                          tiled=True)


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")  # the interpreter's, masked
def test_attention_tiled_kernel_with_every_score_far_below_zero(device, seed):
    """Scores near -120 (lse near -117): a padded key's exp(0 - lse) overflows float32, so the
    tiled backward must mask it rather than multiply it by the key's zeros."""
    g = torch.Generator(device).manual_seed(seed)
    b, h, m, k, scale = 2, 3, 20, 64, 0.125
    u = torch.ones(k, dtype=torch.float64, device=device) / k**0.5
    q = -(120 / scale) * u + _randn(g, b, h, k)
    keys = u + 0.01 * _randn(g, b, m, k)
    leaves = [t.requires_grad_() for t in (q, keys, _randn(g, b, m, 2))]
    ref = single_query_attention_reference(*leaves, scale)
    dout = _randn(g, *ref.shape)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [t.detach().float() for t in leaves]
    out, lse = AK.single_query_attention_forward(*low, scale, block_m=16, tiled=True)
    assert float(lse.max()) < -100
    tri = AK.single_query_attention_backward(dout.float(), *low, scale, out, lse, block_m=16,
                                             tiled=True)
    # |q| ~ 960: float32 rounds each score by ~2^-24 * 960 * scale ~ 7e-6 absolute, so p and the
    # gradients err ~1e-5 relative (seed 1119176095: dk 1.2e-5), not the 1e-5 RMS of a
    # well-conditioned case; what this test guards against is NaN or a wrong term, O(1) off
    for name, a, c in zip(["out", "dq", "dk", "dv"], [ref, *grads], [out, *tri], strict=True):
        assert not torch.isnan(c).any(), name
        err = (a.detach() - c.double()).pow(2).mean().sqrt() / a.detach().pow(2).mean().sqrt()
        assert err < 1e-4, f"{name}: relative RMS error {float(err):.2e}"
