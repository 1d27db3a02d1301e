"""The chunked causal linear-attention kernel against the float64 quadratic reference, and the
reference against the recurrent form (a running state: the same sums taken the other way)."""

from __future__ import annotations

import pytest
import torch

from fastattn.triton_kernels.linear_attention import kernel as K
from fastattn.triton_kernels.linear_attention.reference import (
    causal_linear_attention_recurrent,
    causal_linear_attention_reference,
)
from helpers import half_precision_bound, relative_rms

#: (B, T, H, K, V): one chunk, a partial last chunk, several chunks (16 a chunk under the
#: interpreter), feature sizes below, at and above one 16-wide tile, V = 1 (the read-out)
CASES = [(1, 1, 1, 1, 1), (2, 37, 3, 5, 7), (1, 50, 2, 33, 17), (3, 16, 1, 16, 16), (2, 23, 2, 4, 1),
         *(pytest.param(*c, marks=pytest.mark.cuda_only) for c in [
             (2, 8192, 4, 128, 128), (4, 2048, 16, 64, 64), (3, 1000, 5, 80, 48),
             (4096, 256, 4, 4, 1), (1, 129, 1, 200, 3)])]


def _inputs(b, t, h, kd, vd, seed, device):
    g = torch.Generator(device).manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64, device=device)

    return r(b, t, h, kd), r(b, t, h, kd), r(b, t, h, vd)


@pytest.mark.parametrize("strict", [False, True], ids=["inclusive", "strict"])
def test_reference_equals_the_recurrent_form(strict, seed):
    q, k, v = _inputs(2, 13, 3, 4, 5, seed, "cpu")
    torch.testing.assert_close(causal_linear_attention_recurrent(q, k, v, 0.3, strict),
                               causal_linear_attention_reference(q, k, v, 0.3, strict),
                               rtol=1e-12, atol=1e-12)


def test_reference_reads_the_past_only(seed):
    """Changing token s moves outputs at t >= s (inclusive) or t > s (strict), never before."""
    q, k, v = _inputs(1, 9, 2, 3, 2, seed, "cpu")
    for strict in (False, True):
        base = causal_linear_attention_reference(q, k, v, 1.0, strict)
        k2, v2 = k.clone(), v.clone()
        k2[:, 4] += 1.0
        v2[:, 4] += 1.0
        moved = (causal_linear_attention_reference(q, k2, v2, 1.0, strict) - base).abs()
        first = 5 if strict else 4
        assert moved[:, :first].max() == 0 and moved[:, first].min() > 0


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("strict", [False, True], ids=["inclusive", "strict"])
@pytest.mark.parametrize("b,t,h,kd,vd", CASES, ids=str)
def test_kernel_forward_backward(b, t, h, kd, vd, strict, device, rms_close, seed):
    inputs = _inputs(b, t, h, kd, vd, seed, device)
    leaves = [x.clone().requires_grad_() for x in inputs]
    ref = causal_linear_attention_reference(*leaves, 0.5, strict)
    dout = torch.randn(ref.shape, generator=torch.Generator(device).manual_seed(seed + 1),
                       dtype=torch.float64, device=device)
    grads = torch.autograd.grad(ref, leaves, dout)
    low = [x.float() for x in inputs]
    out, states = K.causal_linear_attention_forward(*low, 0.5, strict)
    rms_close("out", ref, out, torch.float32)
    tri = K.causal_linear_attention_backward(dout.float(), *low, states, 0.5, strict)
    for name, g_ref, g_tri in zip(["dq", "dk", "dv"], grads, tri, strict=True):
        rms_close(name, g_ref, g_tri, torch.float32)


#: (B, T, H, K, V) for half-precision inputs: odd sizes as above, and a long sequence (32 chunks
#: interpreted, 512 compiled), where a state accumulated in the input dtype instead of float32
#: drifts past the bound (each chunk's rounding of the growing state adds up; the bound does not
#: grow with T)
HALF_CASES = [(2, 37, 3, 5, 7), (1, 50, 2, 33, 17), (1, 512, 1, 16, 16),
              pytest.param(1, 16384, 2, 64, 64, marks=pytest.mark.cuda_only)]


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("strict", [False, True], ids=["inclusive", "strict"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("b,t,h,kd,vd", HALF_CASES, ids=str)
def test_kernel_half_precision(b, t, h, kd, vd, dtype, strict, device, seed):
    """bfloat16 / float16 inputs: output and gradients in the input dtype, within
    :func:`half_precision_bound` of the float64 reference on the same rounded inputs."""
    inputs = [x.to(dtype) for x in _inputs(b, t, h, kd, vd, seed, device)]
    dout = torch.randn(b, t, h, vd, generator=torch.Generator(device).manual_seed(seed + 1),
                       device=device).to(dtype)
    leaves = [x.double().requires_grad_() for x in inputs]
    ref = causal_linear_attention_reference(*leaves, 0.5, strict)
    grads = torch.autograd.grad(ref, leaves, dout.double())
    out, states = K.causal_linear_attention_forward(*inputs, 0.5, strict)
    tri = K.causal_linear_attention_backward(dout, *inputs, states, 0.5, strict)
    bound = half_precision_bound(dtype)
    assert states.dtype == torch.float32
    for name, want, got in zip(["out", "dq", "dk", "dv"], [ref, *grads], [out, *tri],
                               strict=True):
        assert got.dtype == dtype, f"{name}: {got.dtype}"
        err = relative_rms(got, want)
        assert err <= bound, f"{name}: relative RMS error {err:.3e} > {bound:.3e}"


def test_kernel_reads_keys_and_values_broadcast_over_heads(device, rms_close, seed):
    """Keys and values expanded over heads (stride 0) are read in place, as the read-out passes
    them; queries as a transposed [B, H, T, K] view."""
    q, k, v = _inputs(2, 21, 3, 6, 2, seed, device)
    k1, v1 = k[:, :, :1].float().expand(k.shape), v[:, :, :1].float().expand(v.shape)
    qt = q.float().transpose(1, 2).contiguous().transpose(1, 2)
    assert k1.stride(2) == 0 and v1.stride(2) == 0 and not qt.is_contiguous()
    out, _ = K.causal_linear_attention_forward(qt, k1, v1, 1.0, True)
    ref = causal_linear_attention_reference(q, k1.double(), v1.double(), 1.0, True)
    rms_close("out", ref, out, torch.float32)


def test_flash_linear_attention_agrees(rms_close, seed):
    """fla's chunked linear attention (normalize=False) on the same inputs, on CUDA, where fla is
    installed: the field's reference implementation, written independently of ours."""
    if not torch.cuda.is_available():
        pytest.skip("flash-linear-attention runs on CUDA; none is visible")
    fla = pytest.importorskip("fla.ops.linear_attn")
    q, k, v = (x.float() for x in _inputs(2, 1000, 4, 64, 64, seed, "cuda"))
    ours, _ = K.causal_linear_attention_forward(q, k, v, 0.125, False)
    theirs, _ = fla.chunk_linear_attn(q, k, v, scale=0.125, normalize=False)
    rms_close("fla", theirs.double(), ours, torch.float32)
