"""icl_readout kernels against the float64 reference; the reference against the literal formula."""

from __future__ import annotations

import pytest
import torch

from fastattn.triton_kernels.icl_readout import kernel as K
from fastattn.triton_kernels.icl_readout.reference import (
    icl_beta_reference,
    icl_readout_backward_reference,
    icl_readout_next_token_backward_reference,
    icl_readout_next_token_reference,
    icl_readout_reference,
)

DTYPES = [torch.float32, torch.float64]
READOUT_CASES = [(1, 1, 1, 1), (3, 5, 17, 2), (17, 33, 5, 3), (5, 17, 64, 1), (33, 3, 3, 5),
                 *(pytest.param(*c, marks=pytest.mark.cuda_only) for c in [
                     (257, 4096, 16, 3), (1000, 100, 64, 4), (65537, 7, 3, 2), (3, 4097, 33, 1),
                     (4096, 64, 48, 2)])]
NEXT_CASES = [(1, 2, 1, 1), (5, 17, 3, 2), (17, 9, 5, 3), (3, 5, 33, 1),
              *(pytest.param(*c, marks=pytest.mark.cuda_only) for c in [
                  (64, 1024, 16, 2), (129, 4097, 5, 1), (33, 200, 64, 3), (5000, 3, 7, 2)])]


def _inputs(b, n, d, h, seed=0, device="cpu"):
    """float64 (x [B, N, D], y [B, N], x_q [B, D], gamma [H, D, D]) on ``device``."""
    g = torch.Generator(device).manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64, device=device)

    return r(b, n, d), r(b, n), r(b, d), r(h, d, d) / d**0.5


def _literal_attn(x, y, x_q, wkq, wv, n_norm):
    """ATTN(X) = X + Σ_i (1/N) W^V_i X Xᵀ W^KQ_i X on the (D+1)×(N+1) token matrix; entry [D, N]."""
    b, n, d = x.shape
    out = []
    for s in range(b):
        cols = torch.cat([torch.cat([x[s].T, y[s][None, :]], 0),
                          torch.cat([x_q[s], x_q.new_zeros(1)])[:, None]], 1)  # [D+1, N+1]
        a = cols.clone()
        for i in range(wkq.shape[0]):
            a = a + wv[i] @ cols @ cols.T @ wkq[i] @ cols / n_norm
        out.append(a[d, n])
    return torch.stack(out)


def test_reference_matches_literal_merged_and_separate():
    b, n, d, h, r = 4, 7, 3, 5, 2
    x, y, x_q, _ = _inputs(b, n, d, 1)
    g = torch.Generator().manual_seed(1)
    v = torch.randn(h, generator=g, dtype=torch.float64)
    u = torch.randn(h, d, d, generator=g, dtype=torch.float64)
    kk = torch.randn(h, r, d, generator=g, dtype=torch.float64)
    qq = torch.randn(h, r, d, generator=g, dtype=torch.float64)
    wv = torch.zeros(h, d + 1, d + 1, dtype=torch.float64)
    wv[:, d, d] = v
    for blocks, gamma in [(u, v[:, None, None] * u),
                          (kk.transpose(1, 2) @ qq, v[:, None, None] * kk.transpose(1, 2) @ qq)]:
        wkq = torch.zeros(h, d + 1, d + 1, dtype=torch.float64)
        wkq[:, :d, :d] = blocks
        literal = _literal_attn(x, y, x_q, wkq, wv, n)
        ref = icl_readout_reference(x, y, x_q, gamma).sum(1)
        torch.testing.assert_close(ref, literal, rtol=1e-12, atol=1e-12)


def test_next_token_reference_matches_literal():
    b, t, d, h = 3, 6, 2, 2
    x, y, _, gamma = _inputs(b, t, d, h)
    wv = torch.zeros(h, d + 1, d + 1, dtype=torch.float64)
    wv[:, d, d] = 1.0
    wkq = torch.zeros(h, d + 1, d + 1, dtype=torch.float64)
    wkq[:, :d, :d] = gamma
    ref = icl_readout_next_token_reference(x, y, gamma).sum(2)  # [B, T-1]
    for pos in range(1, t):  # predict y at 0-based pos from the pos tokens before it
        literal = _literal_attn(x[:, :pos], y[:, :pos], x[:, pos], wkq, wv, pos)
        torch.testing.assert_close(ref[:, pos - 1], literal, rtol=1e-12, atol=1e-12)


def test_reference_backwards_are_autograd_of_the_references(seed):
    """The closed-form backwards (the reference backend's, `fastattn.ops.readout`) against
    autograd through the forward references, float64."""
    g = torch.Generator().manual_seed(seed)
    x, y, x_q, gamma = (t.requires_grad_() for t in _inputs(3, 5, 4, 2, seed))
    out = icl_readout_reference(x, y, x_q, gamma)
    dout = torch.randn(out.shape, generator=g, dtype=torch.float64)
    closed = icl_readout_backward_reference(dout, x, y, x_q, gamma, icl_beta_reference(x, y))
    for name, a, c in zip(["dx", "dy", "dx_q", "dgamma"],
                          torch.autograd.grad(out, (x, y, x_q, gamma), dout), closed, strict=True):
        torch.testing.assert_close(c, a, rtol=1e-12, atol=1e-12, msg=name)
    out = icl_readout_next_token_reference(x, y, gamma)
    dout = torch.randn(out.shape, generator=g, dtype=torch.float64)
    closed = icl_readout_next_token_backward_reference(dout, x, y, gamma)
    for name, a, c in zip(["dx", "dy", "dgamma"], torch.autograd.grad(out, (x, y, gamma), dout),
                          closed, strict=True):
        torch.testing.assert_close(c, a, rtol=1e-12, atol=1e-12, msg=f"next token {name}")


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp64"])
@pytest.mark.parametrize("b,n,d,h", READOUT_CASES, ids=str)
def test_readout_kernel_forward_backward(b, n, d, h, dtype, device, rms_close, seed):
    inputs = _inputs(b, n, d, h, seed=seed, device=device)
    leaves = [t.clone().requires_grad_() for t in inputs]
    ref = icl_readout_reference(*leaves)
    dout = torch.randn(ref.shape, generator=torch.Generator(device).manual_seed(seed + 1),
                       dtype=torch.float64, device=device)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [t.to(dtype) for t in inputs]
    out, beta = K.icl_readout_forward(*low, block_n=4 if n <= 64 else None)
    rms_close("out", ref, out, dtype)
    rms_close("beta", torch.einsum("bn,bnd->bd", inputs[1], inputs[0]) / n, beta, dtype)
    tri = K.icl_readout_backward(dout.to(dtype), *low, beta)
    for name, g_ref, g_tri in zip(["dx", "dy", "dx_q", "dgamma"], grads, tri, strict=True):
        rms_close(name, g_ref, g_tri, dtype)


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp64"])
@pytest.mark.parametrize("b,t,d,h", NEXT_CASES, ids=str)
def test_next_token_kernel_forward_backward(b, t, d, h, dtype, device, rms_close, seed):
    x, y, _, gamma = _inputs(b, t, d, h, seed=seed, device=device)
    leaves = [v.clone().requires_grad_() for v in (x, y, gamma)]
    ref = icl_readout_next_token_reference(*leaves)
    dout = torch.randn(ref.shape, generator=torch.Generator(device).manual_seed(seed + 1),
                       dtype=torch.float64, device=device)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [v.to(dtype) for v in (x, y, gamma)]
    rms_close("out", ref, K.icl_readout_next_token_forward(*low), dtype)
    tri = K.icl_readout_next_token_backward(dout.to(dtype), *low)
    for name, g_ref, g_tri in zip(["dx", "dy", "dgamma"], grads, tri, strict=True):
        rms_close(name, g_ref, g_tri, dtype)
