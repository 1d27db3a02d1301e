"""fastattn.ops.causal_linear_attention and the read-out's "chunked" backend: autograd through the
custom op, dispatch, validation, autodiff transforms."""

from __future__ import annotations

import pytest
import torch

import fastattn.ops as ops
from fastattn.ops._dispatch import backend_reason, select_backend
from fastattn.triton_kernels.icl_readout.reference import icl_readout_next_token_reference
from fastattn.triton_kernels.linear_attention.reference import causal_linear_attention_reference
from helpers import half_precision_bound, relative_rms, seeded_torch, triton_device


@pytest.fixture(params=[pytest.param("interpreter", marks=pytest.mark.interpreter), "cuda"])
def device(request, monkeypatch) -> torch.device:
    return triton_device(request.param, monkeypatch)


def _qkv(g, device, b=2, t=19, h=3, kd=5, vd=4, dtype=torch.float32):
    return tuple(torch.randn(b, t, h, d, generator=g, dtype=dtype).to(device)
                 for d in (kd, kd, vd))


@pytest.mark.parametrize("strict", [False, True], ids=["inclusive", "strict"])
def test_kernel_matches_the_float64_reference_through_autograd(strict, device, rng):
    q, k, v = _qkv(seeded_torch(rng), device)
    k = k[:, :, :1].expand(k.shape)   # keys shared by the heads, as the read-out passes them
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    ref_leaves = [x.double().requires_grad_() for x in (q, k, v)]
    out = ops.causal_linear_attention(*leaves, scale=0.7, strict=strict, backend="triton")
    ref = causal_linear_attention_reference(*ref_leaves, 0.7, strict)
    dout = torch.randn_like(out)
    assert relative_rms(out, ref) < 1e-5
    for a, b in zip(torch.autograd.grad(out, leaves, dout),
                    torch.autograd.grad(ref, ref_leaves, dout.double()), strict=True):
        assert relative_rms(a, b) < 1e-5
    torch.library.opcheck(torch.ops.fastattn.causal_linear_attention.default,
                          (q, k, v, 0.7, strict))


@pytest.mark.parametrize("backend", ["triton", "auto"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_precision_inputs_through_autograd(dtype, backend, device, rng):
    """bfloat16 / float16 inputs run the kernel ("auto" too) and come back in their dtype, output
    and gradients within :func:`half_precision_bound` of float64 on the same rounded inputs."""
    g = seeded_torch(rng)
    q, k, v = (x.to(dtype) for x in _qkv(g, device, t=41))
    dout = torch.randn(2, 41, 3, 4, generator=g).to(device, dtype)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    ref_leaves = [x.double().requires_grad_() for x in (q, k, v)]
    out = ops.causal_linear_attention(*leaves, scale=0.7, strict=True, backend=backend)
    ref = causal_linear_attention_reference(*ref_leaves, 0.7, True)
    got = [out, *torch.autograd.grad(out, leaves, dout)]
    want = [ref, *torch.autograd.grad(ref, ref_leaves, dout.double())]
    for name, a, b in zip(["out", "dq", "dk", "dv"], got, want, strict=True):
        assert a.dtype == dtype, name
        assert relative_rms(a, b) <= half_precision_bound(dtype), name


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_reference_backend_computes_half_inputs_in_float32(dtype, rng):
    """The reference backend returns the inputs' dtype, each element one rounding (to nearest,
    relative 2^-8 bfloat16, 2^-11 float16) from float64 on the same inputs; float32 sums of
    n = K + T terms add at most n 2^-24 of the terms' absolute sum. Scores computed in the half
    dtype would be rounded too (~u / √T of that sum, far above)."""
    q, k, v = (x.to(dtype) for x in _qkv(seeded_torch(rng), "cpu", t=64, kd=16, vd=8))
    out = ops.causal_linear_attention(q, k, v, backend="reference")
    ref = causal_linear_attention_reference(q.double(), k.double(), v.double())
    terms = causal_linear_attention_reference(q.double().abs(), k.double().abs(),
                                              v.double().abs())
    u = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}[dtype]
    assert out.dtype == dtype
    assert ((out.double() - ref).abs() <= u * ref.abs() + (16 + 64) * 2.0**-24 * terms).all()


def test_double_backward_records_the_reference(device, rng):
    """A backward with create_graph=True records the reference's backward: its Hessian-vector
    product equals the reference backend's."""
    g = seeded_torch(rng)
    q, k, v = _qkv(g, device, t=9)
    tangents = _qkv(g, device, t=9)
    hvps = {}
    for backend in ("triton", "reference"):
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        loss = ops.causal_linear_attention(*leaves, backend=backend).pow(2).sum()
        grads = torch.autograd.grad(loss, leaves, create_graph=True)
        dot = sum((gr * t).sum() for gr, t in zip(grads, tangents, strict=True))
        hvps[backend] = torch.cat([x.flatten() for x in torch.autograd.grad(dot, leaves)])
    assert relative_rms(hvps["triton"], hvps["reference"]) < 1e-5


def test_torch_func_runs_the_reference_and_an_explicit_kernel_fails_in_one_line(device, rng):
    q, k, v = _qkv(seeded_torch(rng), device, t=7)
    tangents = tuple(torch.ones_like(x) for x in (q, k, v))
    jvp = torch.func.jvp(lambda *a: ops.causal_linear_attention(*a), (q, k, v), tangents)[1]
    expected = torch.func.jvp(lambda *a: causal_linear_attention_reference(*a), (q, k, v),
                              tangents)[1]
    torch.testing.assert_close(jvp, expected)
    with pytest.raises(ops.BackendUnavailableError) as err:
        torch.func.jvp(lambda *a: ops.causal_linear_attention(*a, backend="triton"), (q, k, v),
                       tangents)
    assert "\n" not in str(err.value) and "torch.func.jvp" in str(err.value)


def test_grad_and_vmap_run_the_reference_and_match_autograd(device, rng):
    """torch.func.grad and vmap through the op (auto): the plain-torch reference runs, so the
    per-sample gradients under vmap equal autograd of the float64 reference sample by sample."""
    q, k, v = (x.double() for x in _qkv(seeded_torch(rng), device, b=3, t=6))

    def loss(q1, k1, v1):
        return ops.causal_linear_attention(q1[None], k1[None], v1[None], scale=0.3).pow(2).sum()

    per_sample = torch.func.vmap(torch.func.grad(loss, argnums=(0, 1, 2)))(q, k, v)
    for i in range(3):
        leaves = [x[i:i + 1].clone().requires_grad_() for x in (q, k, v)]
        want = torch.autograd.grad(
            causal_linear_attention_reference(*leaves, 0.3).pow(2).sum(), leaves)
        for got, w in zip(per_sample, want, strict=True):
            torch.testing.assert_close(got[i], w[0], rtol=1e-12, atol=1e-12)


def test_dispatch_says_why_float64_runs_the_reference(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    cpu = torch.device("cpu")
    dims = {"K": 4, "V": 4}
    assert select_backend("causal_linear_attention", "auto", cpu, torch.float32, dims) == "triton"
    assert select_backend("causal_linear_attention", "auto", cpu, torch.float64, dims) == \
        "reference"
    for half in (torch.bfloat16, torch.float16):
        assert select_backend("causal_linear_attention", "auto", cpu, half, dims) == "triton"
    assert "float64 is not supported (supported: float32, bfloat16, float16)" in backend_reason(
        "causal_linear_attention", "reference", cpu, torch.float64, dims)
    with pytest.raises(ops.BackendUnavailableError, match="float64 is not supported"):
        select_backend("causal_linear_attention", "triton", cpu, torch.float64, dims)
    # the read-out: the chunked kernel first for float32, the serial kernel for float64
    assert select_backend("icl_readout_next_token", "auto", cpu, torch.float32, {"D": 4}) == \
        "chunked"
    assert select_backend("icl_readout_next_token", "auto", cpu, torch.float64, {"D": 4}) == \
        "triton"


@pytest.mark.parametrize("args,match", [
    (((2, 5, 3, 4), (2, 5, 3, 3), (2, 5, 3, 2)), r"^k must be \[B, T, H, K\]"),
    (((2, 5, 3, 4), (2, 5, 3, 4), (2, 4, 3, 2)), r"^v must be \[B, T, H, V\]"),
    (((2, 5, 4), (2, 5, 4), (2, 5, 2)), r"^q must be \[B, T, H, K\]"),
    (((2, 0, 3, 4), (2, 0, 3, 4), (2, 0, 3, 2)), r"^q must have at least one token"),
])
def test_bad_shapes_name_the_argument(args, match):
    q, k, v = (torch.zeros(s) for s in args)
    with pytest.raises(ValueError, match=match):
        ops.causal_linear_attention(q, k, v)


def test_next_token_readout_chunked_equals_the_serial_kernel_and_the_reference(device, rng):
    """The read-out's chunked backend (strict linear attention with query Γ_h x_t / t) against
    the serial kernel and the float64 reference: outputs and every gradient."""
    g = seeded_torch(rng)
    x, y, gamma = (torch.randn(*s, generator=g).to(device) for s in ((3, 37, 5), (3, 37),
                                                                     (2, 5, 5)))
    ref_leaves = [a.double().requires_grad_() for a in (x, y, gamma)]
    ref = icl_readout_next_token_reference(*ref_leaves)
    dout = torch.randn(ref.shape, generator=g).to(device)
    ref_grads = torch.autograd.grad(ref, ref_leaves, dout.double())
    for backend in ("chunked", "triton"):
        leaves = [a.clone().requires_grad_() for a in (x, y, gamma)]
        out = ops.icl_readout_next_token(*leaves, backend=backend)
        assert relative_rms(out, ref) < 1e-5, backend
        for name, a, b in zip("x y gamma".split(), torch.autograd.grad(out, leaves, dout),
                              ref_grads, strict=True):
            assert relative_rms(a, b) < 1e-5, (backend, name)
