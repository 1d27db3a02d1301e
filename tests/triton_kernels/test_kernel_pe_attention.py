"""pe_attention (causal linear attention with a multiplicative positional matrix, Sander et al.
spec §7 item 2): the kernels against the float64 reference, the reference against autograd and a
position-by-position loop, and the op's dispatch."""

from __future__ import annotations

import pytest
import torch

import fastattn.ops as ops
from fastattn.ops import BackendUnavailableError
from fastattn.triton_kernels.pe_attention import kernel as PK
from fastattn.triton_kernels.pe_attention.reference import (
    pe_attention_backward_reference,
    pe_attention_reference,
)

DTYPES = [torch.float32, torch.float64]


def _leaves(g, b, h, tq, tk, kd, vd):
    def r(*s):
        return torch.randn(*s, generator=g, dtype=torch.float64, device=g.device).requires_grad_()

    return [r(b, h, tq, kd), r(b, h, tk, kd), r(b, h, tk, vd), r(h, tq, tk)]


@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_reference_is_the_literal_sum_and_its_backward_is_autograd(lookahead, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v, p = _leaves(g, 2, 3, 4, 6, 3, 2)
    out = pe_attention_reference(q, k, v, p, lookahead)
    literal = torch.zeros_like(out)
    for i in range(4):
        for j in range(min(6, i + lookahead + 1)):
            s = (q[:, :, i] * k[:, :, j]).sum(-1, keepdim=True)             # [B, H, 1]
            literal[:, :, i] += p[:, i, j, None] * s * v[:, :, j]
    torch.testing.assert_close(out, literal, rtol=1e-12, atol=1e-12)
    dout = torch.randn(out.shape, generator=g, dtype=torch.float64)
    auto = torch.autograd.grad(out, (q, k, v, p), dout)
    for name, a, b in zip("qkvp", auto, pe_attention_backward_reference(dout, q, k, v, p, lookahead),
                          strict=True):
        torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12, msg=f"d{name}")


CASES = [(1, 1, 1, 1, 1, 1, 0), (3, 2, 5, 6, 3, 2, 1), (2, 3, 7, 7, 5, 1, 0), (2, 1, 37, 38, 3, 4, 1),
         (1, 2, 3, 9, 2, 3, 0),
         *(pytest.param(*c, marks=pytest.mark.cuda_only)
           for c in [(1024, 64, 50, 50, 10, 10, 0), (513, 7, 49, 50, 17, 5, 1), (64, 4, 200, 200, 33, 9, 0)])]


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp64"])
@pytest.mark.parametrize("b,h,tq,tk,kd,vd,lookahead", CASES, ids=str)
def test_kernel_forward_backward(b, h, tq, tk, kd, vd, lookahead, dtype, device, seed, rms_close):
    g = torch.Generator(device).manual_seed(seed)
    leaves = _leaves(g, b, h, tq, tk, kd, vd)
    ref = pe_attention_reference(*leaves, lookahead)
    dout = torch.randn(ref.shape, generator=g, dtype=torch.float64, device=device)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [t.detach().to(dtype) for t in leaves]
    rms_close("out", ref, PK.pe_attention_forward(*low, lookahead), dtype)
    for name, a, c in zip(["dq", "dk", "dv", "dp"], grads,
                          PK.pe_attention_backward(dout.to(dtype), *low, lookahead), strict=True):
        rms_close(name, a, c, dtype)


# (b, h, tq, tk, kd, vd, lookahead): several (T, T) tiles, B over two sequence blocks (16 per
# program under the interpreter at 32 x 32 tiles), K, V past 16 and 32, a look-ahead of 2
TILED_CASES = [(3, 2, 5, 6, 3, 2, 1), (2, 1, 37, 38, 3, 4, 1), (19, 1, 20, 21, 5, 17, 0),
               (2, 3, 7, 7, 33, 1, 0), (3, 2, 33, 35, 2, 3, 2),
               *(pytest.param(*c, marks=pytest.mark.cuda_only)
                 for c in [(1024, 64, 50, 50, 10, 10, 0), (513, 7, 49, 50, 17, 5, 1),
                           (64, 4, 200, 200, 33, 9, 0), (4095, 3, 16, 16, 4, 4, 0)])]


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("b,h,tq,tk,kd,vd,lookahead", TILED_CASES, ids=str)
def test_tiled_kernel_against_broadcast_kernel_and_float64(b, h, tq, tk, kd, vd, lookahead,
                                                           device, seed, rms_close):
    """The tl.dot kernels and the broadcast ones on the same float32 inputs, each against the
    float64 reference (output, dq, dk, dv, dP); the launcher picks the tl.dot ones at float32."""
    g = torch.Generator(device).manual_seed(seed)
    leaves = _leaves(g, b, h, tq, tk, kd, vd)
    ref = pe_attention_reference(*leaves, lookahead)
    dout = torch.randn(ref.shape, generator=g, dtype=torch.float64, device=device)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [t.detach().float() for t in leaves]
    for tiled in (True, False):
        rms_close(f"out (tiled={tiled})", ref, PK.pe_attention_forward(*low, lookahead, tiled),
                  torch.float32)
        for name, a, c in zip(["dq", "dk", "dv", "dp"], grads,
                              PK.pe_attention_backward(dout.float(), *low, lookahead, tiled),
                              strict=True):
            rms_close(f"{name} (tiled={tiled})", a, c, torch.float32)
    assert PK._use_tiled(torch.float32, None) and not PK._use_tiled(torch.float64, None)
    with pytest.raises(ValueError, match="tiled=True needs float32 inputs; got float64"):
        PK.pe_attention_forward(*(t.double() for t in low), lookahead, tiled=True)


def test_kernel_dp_is_deterministic(device, seed):
    g = torch.Generator(device).manual_seed(seed)
    leaves = [t.detach().float() for t in _leaves(g, 9, 2, 5, 6, 3, 2)]
    dout = torch.randn(9, 2, 5, 2, generator=g, device=device)
    first = PK.pe_attention_backward(dout, *leaves, 1)
    for a, b in zip(first, PK.pe_attention_backward(dout, *leaves, 1), strict=True):
        assert torch.equal(a, b)


def test_op_through_autograd_triton_vs_reference(device, seed):
    g = torch.Generator().manual_seed(seed)
    leaves = [t.detach().to(device).requires_grad_() for t in _leaves(g, 3, 2, 5, 6, 3, 2)]
    views = [leaves[0].transpose(0, 1).contiguous().transpose(0, 1), *leaves[1:3],
             leaves[3][:1].expand(2, 5, 6)]                   # non-contiguous q; P shared by heads
    out_t = ops.pe_attention(*views, lookahead=1, backend="triton")
    out_r = ops.pe_attention(*views, lookahead=1, backend="reference")
    # auto: the kernel under the interpreter; on CUDA the reference, measured faster
    # (fastattn/ops/cuda_timings.json)
    assert ops.pe_attention_backend(*views, lookahead=1)[0] == (
        "triton" if device.type == "cpu" else "reference")
    dout = torch.randn_like(out_r)
    torch.testing.assert_close(out_t, out_r)
    for a, b in zip(torch.autograd.grad(out_t, leaves, dout), torch.autograd.grad(out_r, leaves, dout),
                    strict=True):
        torch.testing.assert_close(a, b)
    torch.library.opcheck(torch.ops.fastattn.pe_attention.default,
                          (*(t.detach().requires_grad_() for t in views), 1, "triton"))


def test_op_reference_gradcheck_dispatch_and_errors(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    g = torch.Generator().manual_seed(0)
    q, k, v, p = _leaves(g, 2, 2, 3, 4, 2, 2)
    assert torch.autograd.gradcheck(lambda *a: ops.pe_attention(*a, lookahead=1), (q, k, v, p))
    torch.library.opcheck(torch.ops.fastattn.pe_attention.default, (q, k, v, p, 1, "reference"))
    name, why = ops.pe_attention_backend(q, k, v, p)
    assert name == "reference" and "TRITON_INTERPRET" in why
    with pytest.raises(BackendUnavailableError, match="TRITON_INTERPRET"):
        ops.pe_attention(q, k, v, p, backend="triton")
    with pytest.raises(ValueError, match=r"p must be \[H, Tq, Tk\]"):
        ops.pe_attention(q, k, v, p[:, :2])
    with pytest.raises(ValueError, match="lookahead"):
        ops.pe_attention(q, k, v, p, lookahead=-1)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert ops.pe_attention_backend(q, k, v, p)[0] == "triton"
