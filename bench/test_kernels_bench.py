"""Kernel benchmarks (pytest-benchmark; no timing asserts).

CPU: sequences/second of one sampled SGD step at the Zhang et al. 2025 Fig. 3 setting (separate
rank-1 attention, D=4, H=5, N=31, Λ eigenvalues .4,.3,.2,.1): the fused path samples (β, x_q, y_q)
directly (Wishart sampler, no [B, N, D] tensor) and reads out through ``fastattn.ops.cubic_hidden``,
against the literal (D+1)×(N+1) token-matrix formula on the full token tensor.

CUDA (skipped without a device): each kernel against its reference and torch.compile of it,
forward and forward+backward, float32; the sampler against the torch samplers.

    pytest bench/test_kernels_bench.py --benchmark-only --benchmark-columns=mean,ops
    pytest bench/test_kernels_bench.py -k cuda --benchmark-json bench.json  # the GPU table

Each case is labelled with its (op, shape, pass) group and fields (bench/groups.py), so the
implementations of one op, shape and pass share a table (``--benchmark-group-by=group``, the
default); comparing revisions: docs/benchmarks.md, "Comparing revisions".
"""

from __future__ import annotations

import pytest
import torch
from groups import label

import fastattn.ops as ops
from fastattn.triton_kernels.cubic.reference import cubic_hidden_reference
from fastattn.triton_kernels.icl_readout.reference import (
    icl_readout_next_token_reference,
    icl_readout_reference,
)
from fastattn.triton_kernels.pe_attention.reference import pe_attention_reference
from fastattn.triton_kernels.single_query_attention.reference import (
    single_query_attention_reference,
)

D, H, N, LR = 4, 5, 31, 0.01
BATCH = 1 << 14


def _params():
    g = torch.Generator().manual_seed(0)
    return [(1e-2 * torch.randn(*s, generator=g)).requires_grad_() for s in ((H,), (H, 1, D),
                                                                           (H, 1, D))]


def _cov_factor():
    return torch.diag(torch.tensor([0.4, 0.3, 0.2, 0.1]).sqrt())


def _fused_step(params, step, lmat):
    v, k, q = params
    beta, x_q, y_q = ops.sample_icl_stats(0, step, BATCH, N, lmat, torch.zeros(D), torch.eye(D),
                                          0.0, torch.float32, backend="wishart")
    gamma = v[:, None, None] * k.transpose(1, 2) @ q  # [H, D, D]
    pred = ops.cubic_hidden(beta, x_q, gamma.reshape(H, D * D), backend="reference").sum(1)
    loss = (y_q - pred).pow(2).mean()
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, gr in zip(params, grads, strict=True):
            p -= LR * gr
    return loss


def _literal_step(params, step, lmat):
    v, k, q = params
    g = torch.Generator().manual_seed(step)
    x = torch.randn(BATCH, N + 1, D, generator=g) @ lmat.T
    w = torch.randn(BATCH, D, generator=g)
    y = torch.einsum("bnd,bd->bn", x, w)
    y_q = y[:, -1]
    z = torch.cat([x, torch.cat([y[:, :-1], torch.zeros(BATCH, 1)], 1)[..., None]], 2)
    cols = z.transpose(1, 2)  # [B, D+1, N+1] tokens as columns
    eye = torch.zeros(D + 1, D)
    eye[:D] = torch.eye(D)
    wkq = eye @ k.transpose(1, 2) @ q @ eye.T  # [H, D+1, D+1], zero last row/column
    wv = torch.zeros(H, D + 1, D + 1)
    wv = wv + torch.zeros(H, D + 1, D + 1).index_put((torch.arange(H), torch.tensor(D),
                                                      torch.tensor(D)), v)
    out = cols + sum(wv[i] @ cols @ cols.transpose(1, 2) @ wkq[i] @ cols / N for i in range(H))
    loss = (y_q - out[:, D, N]).pow(2).mean()
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, gr in zip(params, grads, strict=True):
            p -= LR * gr
    return loss


@pytest.mark.parametrize("path", ["fused", "literal"])
def test_cpu_sampled_training_step(benchmark, path):
    """Sequences per second of sample + forward + backward + update (B = 2^14, float32)."""
    label(benchmark, "sampled_training_step", {"B": BATCH, "N": N, "D": D, "H": H},
          "sample+fwd+bwd+update", path)
    params, lmat, state = _params(), _cov_factor(), {"step": 0}
    fn = _fused_step if path == "fused" else _literal_step

    def run():
        state["step"] += 1
        return fn(params, state["step"], lmat)

    benchmark.pedantic(run, rounds=10, warmup_rounds=2)
    if benchmark.stats is not None:          # None under --benchmark-disable (one plain call)
        benchmark.extra_info["sequences_per_s"] = BATCH / benchmark.stats.stats.mean
    benchmark.extra_info["setting"] = "Zhang et al. Fig. 3: attnS R=1, D=4, H=5, N=31"


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA benchmarks need a GPU")

# float32 elements each pass must read plus write at the least (inputs once, outputs once): the
# forward reads the inputs and writes the outputs; the backward reads the inputs, the saved
# outputs and dout, and writes one gradient per input. Bytes = 4 x elements.
CUDA_CASES = {
    "icl_readout": [(1 << 20, 32, 4, 4), (1 << 16, 1024, 16, 4), (1 << 14, 1024, 64, 4)],
    "icl_readout_next_token": [(1 << 14, 256, 4, 4), (1 << 12, 1024, 16, 4)],
    "cubic_hidden": [(1 << 20, 1, 4, 4), (1 << 20, 1, 16, 4), (1 << 18, 1, 64, 4)],
    "single_query_attention": [(1 << 16, 32, 4, 4), (1 << 16, 1024, 16, 4),
                               (1 << 14, 1024, 64, 4), (1 << 12, 4096, 128, 4)],
    # (B, T, E, H): Sander et al. Fig. 7 (B = 1024, T = 50, E = 10, H = 64), and a longer T
    "pe_attention": [(1 << 10, 50, 10, 64), (1 << 12, 256, 16, 4)],
}
CUDA_KERNEL_CASES = [(op, *c) for op, cases in CUDA_CASES.items() for c in cases]
CUDA_IMPLS = ("triton", "reference", "compiled-reference")
CUDA_PASSES = ("fwd", "fwd+bwd")
# the names of a case's four sizes, for its benchmark group and extra_info (bench/groups.py)
CUDA_DIMS = {op: ("B", "T", "E", "H") if op == "pe_attention" else ("B", "N", "D", "H")
             for op in CUDA_CASES}


def _cuda_case(op, b, n, d, h, device="cuda"):
    """(inputs, Triton op, reference, fwd elements, bwd elements) for op at (B, N, D, H), V = 1."""
    g = torch.Generator(device=device).manual_seed(0)

    def r(*s, scale=1.0):
        return (scale * torch.randn(*s, generator=g, device=device)).requires_grad_()

    if op == "icl_readout":
        ins = b * n * d + b * n + b * d + h * d * d
        args = (r(b, n, d), r(b, n), r(b, d), r(h, d, d, scale=1 / d))
        return (args, ops.icl_readout, icl_readout_reference,
                ins + b * h + b * d, 2 * ins + b * d + b * h)
    if op == "icl_readout_next_token":
        ins = b * n * d + b * n + h * d * d
        outs = b * (n - 1) * h
        args = (r(b, n, d), r(b, n), r(h, d, d, scale=1 / d))
        return (args, ops.icl_readout_next_token, icl_readout_next_token_reference,
                ins + outs, 2 * ins + outs)
    if op == "cubic_hidden":
        ins = 2 * b * d + h * d * d
        args = (r(b, d), r(b, d), r(h, d * d, scale=1 / d))
        return args, ops.cubic_hidden, cubic_hidden_reference, ins + b * h, 2 * ins + b * h
    if op == "pe_attention":
        ins = 3 * b * h * n * d + h * n * n
        args = (r(b, h, n, d, scale=d**-0.5), r(b, h, n, d), r(b, h, n, d), r(h, n, n, scale=1 / n))
        return (args, ops.pe_attention, pe_attention_reference, ins + b * h * n * d,
                2 * ins + b * h * n * d)
    scale = d**-0.5
    ins = b * h * d + b * n * d + b * n
    args = (r(b, h, d), r(b, n, d), r(b, n, 1))
    return (args, lambda *a, **k: ops.single_query_attention(*a, scale, **k),
            lambda *a: single_query_attention_reference(*a, scale),
            ins + 2 * b * h, 2 * ins + 3 * b * h)


_COMPILED: dict[str, object] = {}


def label_kernel(benchmark, op, b, n, d, h, impl, mode):
    """test_cuda_kernel's group and fields (bench/groups.py; read by bench/gpu_table.py)."""
    label(benchmark, op, dict(zip(CUDA_DIMS[op], (b, n, d, h), strict=True)), mode, impl)


@cuda
@pytest.mark.parametrize("mode", CUDA_PASSES)
@pytest.mark.parametrize("impl", CUDA_IMPLS)
@pytest.mark.parametrize("op,b,n,d,h", CUDA_KERNEL_CASES, ids=str)
def test_cuda_kernel(benchmark, op, b, n, d, h, impl, mode):
    """Wall time of one synchronised call (pytest-benchmark) and the kernel time on the device
    (triton.testing.do_bench: CUDA events, L2 flushed, median); GB/s from the latter and the
    fewest bytes the pass must move (the ``CUDA_CASES`` comment)."""
    from triton.testing import do_bench

    label_kernel(benchmark, op, b, n, d, h, impl, mode)
    args, fused, ref, fwd_elems, bwd_elems = _cuda_case(op, b, n, d, h)
    if impl == "triton":
        fn = lambda: fused(*args, backend="triton")  # noqa: E731
    elif impl == "reference":
        fn = lambda: ref(*args)  # noqa: E731
    else:
        compiled = _COMPILED.setdefault(op, torch.compile(ref, dynamic=False))
        fn = lambda: compiled(*args)  # noqa: E731

    def once():
        out = fn()
        if mode == "fwd+bwd":
            torch.autograd.grad(out.sum(), args)

    def run():
        once()
        torch.cuda.synchronize()

    benchmark.pedantic(run, rounds=20, warmup_rounds=3)
    median_ms = do_bench(once, warmup=25, rep=200, return_mode="median")
    nbytes = 4 * (fwd_elems + (bwd_elems if mode == "fwd+bwd" else 0))
    benchmark.extra_info.update({"device_median_ms": median_ms, "min_bytes": nbytes,
                                 "GB_per_s": nbytes / median_ms / 1e6,
                                 "device": torch.cuda.get_device_name(0),
                                 "torch": torch.__version__})


@cuda
def test_cuda_copy_bandwidth(benchmark):
    """The device's copy rate (``y.copy_(x)`` of 4 GiB, read + write, do_bench median): what a
    bandwidth-bound kernel can reach on this card, measured in the same run as the kernels
    (bench/gpu_table.py's "of copy" column)."""
    from triton.testing import do_bench

    label(benchmark, "device_copy", {"GiB": 4}, "copy", "torch")
    x = torch.empty(1 << 30, device="cuda")
    y = torch.empty_like(x)
    benchmark.pedantic(lambda: (y.copy_(x), torch.cuda.synchronize()), rounds=3, warmup_rounds=1)
    median_ms = do_bench(lambda: y.copy_(x), warmup=25, rep=200, return_mode="median")
    benchmark.extra_info.update({"device_median_ms": median_ms,
                                 "copy_GB_per_s": 2 * x.numel() * 4 / median_ms / 1e6,
                                 "device": torch.cuda.get_device_name(0)})


@cuda
@pytest.mark.parametrize("backend", ["triton", "wishart", "reference"])
@pytest.mark.parametrize("b,n,d", [(1 << 20, 32, 4), (1 << 16, 1024, 16)], ids=str)
def test_cuda_sampling(benchmark, b, n, d, backend):
    """Sequences per second of ``sample_icl_stats`` on CUDA (float32; writes only (β, x_q, y_q))."""
    from triton.testing import do_bench

    label(benchmark, "sample_icl_stats", {"B": b, "N": n, "D": d}, "sample", backend)
    lmat = torch.eye(d, device="cuda")
    mu = torch.zeros(d, device="cuda")
    state = {"step": 0}

    def once():
        state["step"] += 1
        return ops.sample_icl_stats(0, state["step"], b, n, lmat, mu, lmat, 0.1, backend=backend)

    def run():
        once()
        torch.cuda.synchronize()

    benchmark.pedantic(run, rounds=10, warmup_rounds=2)
    median_ms = do_bench(once, warmup=25, rep=200, return_mode="median")
    benchmark.extra_info.update({"device_median_ms": median_ms,
                                 "sequences_per_s": b / median_ms * 1e3,
                                 "device": torch.cuda.get_device_name(0)})


@cuda
@pytest.mark.parametrize("runs,heads", [(1, 8), (20, 1), (20, 8), (100, 8)], ids=str)
def test_cuda_he_train_step(benchmark, runs, heads):
    """One fused Adam step of R He et al. 2025 runs on CUDA (Triton: gradient kernel + Adam kernel)
    at the paper's shapes d = 5, L = 40, B = 256, float32: steps per second and run-steps per
    second (spec §7.2's target: <= 50 µs per step per group of runs)."""
    from triton.testing import do_bench

    d, context, batch = 5, 40, 256
    label(benchmark, "he_adam_step", {"R": runs, "H": heads, "d": d, "L": context, "B": batch},
          "adam step", "triton")
    dd = d + 1
    p = 3 * heads * dd * dd + heads * dd
    g = torch.Generator(device="cuda").manual_seed(0)
    theta = 0.1 * torch.randn(runs, p, generator=g, device="cuda")
    m, v = torch.zeros_like(theta), torch.zeros_like(theta)
    eye = torch.eye(d, device="cuda").expand(runs, d, d).contiguous()
    seeds = torch.arange(runs, device="cuda")
    lr, noise = torch.full((runs,), 1e-3, device="cuda"), torch.zeros(runs, device="cuda")
    state = {"step": 0}

    def once():
        state["step"] += 1
        return ops.he_adam_step(theta, m, v, seeds, lr, eye, eye / d**0.5, noise, heads, context,
                                batch, state["step"], backend="triton")

    def run():
        once()
        torch.cuda.synchronize()

    benchmark.pedantic(run, rounds=20, warmup_rounds=3)
    median_ms = do_bench(once, warmup=25, rep=200, return_mode="median")
    benchmark.extra_info.update({"device_median_ms": median_ms,
                                 "run_steps_per_s": runs / median_ms * 1e3,
                                 "setting": f"d={d}, L={context}, B={batch}, H={heads}, R={runs}",
                                 "device": torch.cuda.get_device_name(0)})
