"""Kernel benchmarks (pytest-benchmark; no timing asserts).

CPU: sequences/second of one sampled SGD step at the Zhang et al. 2025 Fig. 3 setting (separate
rank-1 attention, D=4, H=5, N=31, Λ eigenvalues .4,.3,.2,.1): the fused path samples (β, x_q, y_q)
directly (Wishart sampler, no [B, N, D] tensor) and reads out through ``fastattn.ops.cubic_hidden``,
against the literal (D+1)×(N+1) token-matrix formula on the full token tensor.

CUDA (skipped without a device): each kernel against its reference and torch.compile of it.

    pytest bench/test_kernels_bench.py --benchmark-only --benchmark-columns=mean,ops
"""

from __future__ import annotations

import pytest
import torch

import fastattn.ops as ops
from fastattn.triton_kernels.cubic.reference import cubic_hidden_reference
from fastattn.triton_kernels.icl_readout.reference import icl_readout_reference
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
    params, lmat, state = _params(), _cov_factor(), {"step": 0}
    fn = _fused_step if path == "fused" else _literal_step

    def run():
        state["step"] += 1
        return fn(params, state["step"], lmat)

    benchmark.pedantic(run, rounds=10, warmup_rounds=2)
    benchmark.extra_info["sequences_per_s"] = BATCH / benchmark.stats.stats.mean
    benchmark.extra_info["setting"] = "Zhang et al. Fig. 3: attnS R=1, D=4, H=5, N=31"


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA benchmarks need a GPU")


def _cuda_case(op, b, n, d):
    g = torch.Generator(device="cuda").manual_seed(0)

    def r(*s):
        return torch.randn(*s, generator=g, device="cuda").requires_grad_()

    if op == "icl_readout":
        args = (r(b, n, d), r(b, n), r(b, d), r(4, d, d))
        return args, ops.icl_readout, icl_readout_reference, 4 * (b * n * (d + 1) + b * d + b * 4)
    if op == "cubic_hidden":
        args = (r(b, d), r(b, d), r(4, d * d))
        return args, ops.cubic_hidden, cubic_hidden_reference, 4 * (2 * b * d + b * 4)
    args = (r(b, 4, d), r(b, n, d), r(b, n, 1))
    return (args, lambda *a, **k: ops.single_query_attention(*a, d**-0.5, **k),
            lambda *a: single_query_attention_reference(*a, d**-0.5),
            4 * (b * 4 * d + b * n * (d + 1) + b * 4))


@cuda
@pytest.mark.parametrize("mode", ["fwd", "fwd+bwd"])
@pytest.mark.parametrize("impl", ["triton", "reference", "compiled-reference"])
@pytest.mark.parametrize("d", [4, 16, 64])
@pytest.mark.parametrize("n", [32, 1024])
@pytest.mark.parametrize("b", [1 << 16, 1 << 20])
@pytest.mark.parametrize("op", ["icl_readout", "cubic_hidden", "single_query_attention"])
def test_cuda_kernel(benchmark, op, b, n, d, impl, mode):
    if op != "cubic_hidden" and b * n * d * 4 > torch.cuda.get_device_properties(0).total_memory / 4:
        pytest.skip("inputs do not fit comfortably in device memory")
    args, fused, ref, nbytes = _cuda_case(op, b, n, d)
    if impl == "triton":
        fn = lambda: fused(*args, backend="triton")  # noqa: E731
    elif impl == "reference":
        fn = lambda: ref(*args)  # noqa: E731
    else:
        compiled = torch.compile(ref)
        fn = lambda: compiled(*args)  # noqa: E731

    def run():
        out = fn()
        if mode == "fwd+bwd":
            torch.autograd.grad(out.sum(), args)
        torch.cuda.synchronize()

    benchmark.pedantic(run, rounds=20, warmup_rounds=3)
    benchmark.extra_info["GB_per_s_fwd_inputs"] = nbytes / benchmark.stats.stats.mean / 1e9
