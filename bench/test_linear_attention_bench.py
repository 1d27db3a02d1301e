"""Causal linear attention on CUDA: the chunked kernel against flash-linear-attention's chunked
kernel, the quadratic reference (eager) and ``torch.compile`` of it, same inputs, same run; and the
next-token read-out's chunked backend beside the serial kernel of bench/test_kernels_bench.py
(same groups, so bench/gpu_table.py puts them in one row).

    pytest bench/test_linear_attention_bench.py -k cuda --benchmark-json la.json

fla is compared where ``import fla`` works (``pip install fla-core``; bench/gpu_all.sh installs
the wheels of ``$WHEELS``). Skipped without a GPU; no timing asserts.
"""

from __future__ import annotations

import pytest
import torch
from groups import label
from test_kernels_bench import _cuda_case, label_kernel

import fastattn.ops as ops
from fastattn.triton_kernels.linear_attention.reference import causal_linear_attention_reference

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA benchmarks need a GPU")

#: (B, T, H, K = V): flash-linear-attention's benchmark range (head dim 16-128, T up to 8192)
SHAPES = [(16, 1024, 16, 16), (8, 2048, 16, 64), (4, 4096, 8, 128), (2, 8192, 8, 128)]
#: "triton-tf32": the kernel at torch.set_float32_matmul_precision("high"), one TF32 product per
#: tl.dot instead of three (float32 only): what fla's float32 kernels compute with
IMPLS = ("triton", "triton-tf32", "fla", "reference", "compiled-reference")
#: fla is usually run in bfloat16: every implementation is timed in both, each against fla in its own
DTYPES = (torch.float32, torch.bfloat16)
PASSES = ("fwd", "fwd+bwd")
#: the chunk length of the FLOP count: the kernel's compiled chunk (kernel._blocks)
CHUNK = 32

_COMPILED: dict[str, object] = {}


def _flops(b: int, t: int, h: int, d: int, mode: str) -> int:
    """Multiply-adds x 2 of the chunked form: per token, the state update and the state read
    (2 K V each) and the masked scores and their product with v (2 C K, 2 C V); the backward
    does about twice the forward."""
    fwd = 2 * b * t * h * (2 * d * d + CHUNK * d + CHUNK * d)
    return fwd * (3 if mode == "fwd+bwd" else 1)


def _timed(benchmark, once, nbytes: int, flops: int) -> None:
    from triton.testing import do_bench

    def run():
        once()
        torch.cuda.synchronize()

    benchmark.pedantic(run, rounds=10, warmup_rounds=2)
    median_ms = do_bench(once, warmup=25, rep=200, return_mode="median")
    benchmark.extra_info.update({"device_median_ms": median_ms, "min_bytes": nbytes,
                                 "GB_per_s": nbytes / median_ms / 1e6, "flops": flops,
                                 "TFLOP_per_s": flops / median_ms / 1e9,
                                 "device": torch.cuda.get_device_name(0),
                                 "torch": torch.__version__})


@cuda
@pytest.mark.parametrize("mode", PASSES)
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("b,t,h,d", SHAPES, ids=str)
def test_cuda_causal_linear_attention(benchmark, b, t, h, d, dtype, impl, mode):
    """Device median (triton.testing.do_bench: CUDA events, L2 flushed) of o = causal(q kᵀ) v at
    scale K^-1/2, in ``dtype`` (the group: same dtype, so fla is compared in ours); GB/s from the
    fewest bytes (q, k, v read and o written once; the backward also reads do and writes dq, dk,
    dv), TFLOP/s from :func:`_flops`."""
    label(benchmark, "causal_linear_attention", {"B": b, "T": t, "H": h, "K": d}, mode, impl,
          dtype=str(dtype).removeprefix("torch."))
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, t, h, d, generator=g, device="cuda", dtype=dtype).requires_grad_()
               for _ in range(3))
    scale = d**-0.5
    if impl == "triton-tf32" and dtype != torch.float32:
        pytest.skip("TF32 is a float32 setting")
    if impl.startswith("triton"):
        fn = lambda: ops.causal_linear_attention(q, k, v, scale=scale, backend="triton")  # noqa: E731
    elif impl == "fla":
        fla = pytest.importorskip("fla.ops.linear_attn")
        fn = lambda: fla.chunk_linear_attn(q, k, v, scale=scale, normalize=False)[0]  # noqa: E731
    elif impl == "reference":
        fn = lambda: causal_linear_attention_reference(q, k, v, scale)  # noqa: E731
    else:
        compiled = _COMPILED.setdefault("cla", torch.compile(causal_linear_attention_reference,
                                                             dynamic=False))
        fn = lambda: compiled(q, k, v, scale)  # noqa: E731

    def once():
        out = fn()
        if mode == "fwd+bwd":
            torch.autograd.grad(out.sum(), (q, k, v))

    elems = 4 * b * t * h * d
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if impl == "triton-tf32" else "highest")
    try:
        _timed(benchmark, once,
               dtype.itemsize * (elems if mode == "fwd" else 2 * elems + 3 * b * t * h * d),
               _flops(b, t, h, d, mode))
    finally:
        torch.set_float32_matmul_precision(before)


@cuda
@pytest.mark.parametrize("mode", PASSES)
@pytest.mark.parametrize("b,n,d,h", [(1 << 14, 256, 4, 4), (1 << 12, 1024, 16, 4)], ids=str)
def test_cuda_next_token_chunked(benchmark, b, n, d, h, mode):
    """The read-out's chunked backend at bench/test_kernels_bench.py's next-token shapes, in the
    same groups as its serial kernel ("triton"), eager and compiled references."""
    label_kernel(benchmark, "icl_readout_next_token", b, n, d, h, "chunked", mode)
    args, fused, _, fwd_elems, bwd_elems = _cuda_case("icl_readout_next_token", b, n, d, h)

    def once():
        out = fused(*args, backend="chunked")
        if mode == "fwd+bwd":
            torch.autograd.grad(out.sum(), args)

    _timed(benchmark, once, 4 * (fwd_elems + (bwd_elems if mode == "fwd+bwd" else 0)), 0)
