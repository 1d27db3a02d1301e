"""Triton kernel drawing an ICL linear-regression batch and reducing it to (β, x_q, y_q) on chip.

Normals come from Philox (``tl.randn``, float32 precision, cast to the output dtype) keyed by
``mix_seed(seed, step)`` and a per-sequence counter, so a batch is a pure function of (seed, step):
the first rows of a batch of B are bitwise those of any larger batch. Compiled (CUDA) and
interpreted (CPU) runs draw the same normals and agree up to rounding. No [B, N, D] tensor is
written.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._launch import TritonKernel, block_size, register_budget
from .reference import mix_seed

__all__ = ["sample_icl_stats_kernel"]


def _sample(seed, l_ptr, mu_ptr, f_ptr, sigma_ptr, beta_ptr, xq_ptr, yq_ptr, B, N, D,
            BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb = ob < B
    md = od < D
    m2 = mb[:, None] & md[None, :]
    dt = beta_ptr.dtype.element_ty
    base = ob * ((N + 1) * (D + 1) + D)  # [BB] first Philox counter of each sequence
    sigma = tl.load(sigma_ptr)
    w = tl.zeros([BLOCK_B, BLOCK_D], dtype=dt) + tl.load(mu_ptr + od, mask=md, other=0.0)[None, :]
    for j in range(D):
        xi = tl.randn(seed, base + j).to(dt)  # [BB]
        w += xi[:, None] * tl.load(f_ptr + od * D + j, mask=md, other=0.0)[None, :]
    acc = tl.zeros([BLOCK_B, BLOCK_D], dtype=dt)
    for n0 in range(0, N, BLOCK_N):
        on = n0 + tl.arange(0, BLOCK_N)
        mn = on < N
        tok = base[:, None] + D + on[None, :] * (D + 1)  # [BB, BN]
        x = tl.zeros([BLOCK_B, BLOCK_N, BLOCK_D], dtype=dt)
        for j in range(D):
            z = tl.randn(seed, tok + j).to(dt)  # [BB, BN]
            x += z[:, :, None] * tl.load(l_ptr + od * D + j, mask=md, other=0.0)[None, None, :]
        eps = tl.randn(seed, tok + D).to(dt)
        y = tl.sum(x * w[:, None, :], axis=2) + sigma * eps  # [BB, BN]
        y = tl.where(mn[None, :], y, 0.0)
        acc += tl.sum(y[:, :, None] * x, axis=1)
    tl.store(beta_ptr + ob[:, None] * D + od[None, :], acc / N, mask=m2)
    qoff = base + D + N * (D + 1)  # [BB]
    xq = tl.zeros([BLOCK_B, BLOCK_D], dtype=dt)
    for j in range(D):
        z = tl.randn(seed, qoff + j).to(dt)
        xq += z[:, None] * tl.load(l_ptr + od * D + j, mask=md, other=0.0)[None, :]
    yq = tl.sum(xq * w, axis=1) + sigma * tl.randn(seed, qoff + D).to(dt)
    tl.store(xq_ptr + ob[:, None] * D + od[None, :], xq, mask=m2)
    tl.store(yq_ptr + ob, yq, mask=mb)


_k_sample = TritonKernel(_sample)


def sample_icl_stats_kernel(seed: int, step: int, batch: int, context: int,
                            cov_factor: torch.Tensor, w_mean: torch.Tensor,
                            w_factor: torch.Tensor, noise_std: float,
                            dtype: torch.dtype = torch.float32
                            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(β [B, D], x_q [B, D], y_q [B]) drawn on the device of ``cov_factor``; see module doc."""
    dev = cov_factor.device
    d = cov_factor.shape[0]
    lmat = cov_factor.to(dtype).contiguous()
    fmat = w_factor.to(dtype).contiguous()
    mu = w_mean.to(dtype).contiguous()
    sigma = torch.full((1,), float(noise_std), dtype=dtype, device=dev)
    beta = torch.empty(batch, d, dtype=dtype, device=dev)
    xq = torch.empty(batch, d, dtype=dtype, device=dev)
    yq = torch.empty(batch, dtype=dtype, device=dev)
    budget = register_budget(dtype, 1 << 11, interpreted=1 << 15)
    bd = block_size(d)
    bn = max(1, min(block_size(context), 16, budget // bd))
    # BLOCK_B must not depend on the batch size: compiled code sums in an order set by the block
    # shape, so a batch-dependent block would change the rounding of the first rows with B
    bb = max(1, budget // (bn * bd))
    # the warps with no spill on sm_80 and sm_90 at every planned shape (`fastattn kernels`);
    # 4 spilled a register in each dtype at one shape
    _k_sample[(triton.cdiv(batch, bb),)](mix_seed(seed, step), lmat, mu, fmat, sigma, beta, xq, yq,
                                         batch, context, d,
                                         BLOCK_B=bb, BLOCK_N=bn, BLOCK_D=bd,
                                         num_warps=8 if dtype.itemsize <= 4 else 2)
    return beta, xq, yq
