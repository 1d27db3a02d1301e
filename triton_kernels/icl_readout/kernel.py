"""Triton kernels for the ICL linear read-out: one pass over the context, β in registers.

No ``tl.dot`` (D may be below 16 and float64 must run under the interpreter).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._launch import TritonKernel, block_rows, block_size, persistent_programs, register_budget
from ..cubic.kernel import bilinear_backward

__all__ = [
    "icl_readout_backward",
    "icl_readout_forward",
    "icl_readout_next_token_backward",
    "icl_readout_next_token_forward",
]


def _budget(dtype: torch.dtype) -> int:
    return register_budget(dtype, 1 << 13)


def _readout_fwd(x_ptr, y_ptr, xq_ptr, g_ptr, out_ptr, beta_ptr, B, N, D, H,
                 BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb = ob < B
    md = od < D
    m2 = mb[:, None] & md[None, :]
    acc = tl.zeros([BLOCK_B, BLOCK_D], dtype=x_ptr.dtype.element_ty)
    for n0 in range(0, N, BLOCK_N):
        on = n0 + tl.arange(0, BLOCK_N)
        mn = on < N
        xv = tl.load(x_ptr + ob[:, None, None] * N * D + on[None, :, None] * D + od[None, None, :],
                     mask=mb[:, None, None] & mn[None, :, None] & md[None, None, :],
                     other=0.0)  # [BB, BN, BD]
        yv = tl.load(y_ptr + ob[:, None] * N + on[None, :], mask=mb[:, None] & mn[None, :],
                     other=0.0)  # [BB, BN]
        acc += tl.sum(xv * yv[:, :, None], axis=1)
    beta = acc / N  # [BB, BD]
    tl.store(beta_ptr + ob[:, None] * D + od[None, :], beta, mask=m2)
    xq = tl.load(xq_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
    mg = md[:, None] & md[None, :]
    for h in range(H):
        g = tl.load(g_ptr + h * D * D + od[:, None] * D + od[None, :], mask=mg, other=0.0)  # [BD, BD]
        gx = tl.sum(g[None, :, :] * xq[:, None, :], axis=2)  # [BB, BD]
        tl.store(out_ptr + ob * H + h, tl.sum(beta * gx, axis=1), mask=mb)


def _context_bwd(x_ptr, y_ptr, dbeta_ptr, dx_ptr, dy_ptr, B, N, D,
                 BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb = ob < B
    md = od < D
    dbeta = tl.load(dbeta_ptr + ob[:, None] * D + od[None, :], mask=mb[:, None] & md[None, :],
                    other=0.0) / N  # [BB, BD]
    for n0 in range(0, N, BLOCK_N):
        on = n0 + tl.arange(0, BLOCK_N)
        mn = on < N
        m3 = mb[:, None, None] & mn[None, :, None] & md[None, None, :]
        off3 = ob[:, None, None] * N * D + on[None, :, None] * D + od[None, None, :]
        xv = tl.load(x_ptr + off3, mask=m3, other=0.0)  # [BB, BN, BD]
        m2 = mb[:, None] & mn[None, :]
        yv = tl.load(y_ptr + ob[:, None] * N + on[None, :], mask=m2, other=0.0)  # [BB, BN]
        tl.store(dx_ptr + off3, yv[:, :, None] * dbeta[:, None, :], mask=m3)
        tl.store(dy_ptr + ob[:, None] * N + on[None, :], tl.sum(xv * dbeta[:, None, :], axis=2),
                 mask=m2)


def _next_fwd(x_ptr, y_ptr, g_ptr, out_ptr, B, T, D, H,
              BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb = ob < B
    md = od < D
    m2 = mb[:, None] & md[None, :]
    mg = md[:, None] & md[None, :]
    s = tl.zeros([BLOCK_B, BLOCK_D], dtype=x_ptr.dtype.element_ty)  # prefix Σ y x
    for t in range(T):
        xt = tl.load(x_ptr + ob[:, None] * T * D + t * D + od[None, :], mask=m2, other=0.0)
        yt = tl.load(y_ptr + ob * T + t, mask=mb, other=0.0)  # [BB]
        if t > 0:
            for h in range(H):  # x_t is read once for all heads; Γ_h comes from the cache
                g = tl.load(g_ptr + h * D * D + od[:, None] * D + od[None, :], mask=mg, other=0.0)
                gx = tl.sum(g[None, :, :] * xt[:, None, :], axis=2)  # [BB, BD]
                o = tl.sum(s * gx, axis=1) / t
                tl.store(out_ptr + ob * (T - 1) * H + (t - 1) * H + h, o, mask=mb)
        s += yt[:, None] * xt


def _next_bwd_inputs(x_ptr, y_ptr, g_ptr, dout_ptr, dx_ptr, dy_ptr, B, T, D, H,
                     BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb = ob < B
    md = od < D
    m2 = mb[:, None] & md[None, :]
    mg = md[:, None] & md[None, :]
    s = tl.zeros([BLOCK_B, BLOCK_D], dtype=x_ptr.dtype.element_ty)
    for t in range(T):
        xt = tl.load(x_ptr + ob[:, None] * T * D + t * D + od[None, :], mask=m2, other=0.0)
        yt = tl.load(y_ptr + ob * T + t, mask=mb, other=0.0)
        s += yt[:, None] * xt
    r = tl.zeros([BLOCK_B, BLOCK_D], dtype=x_ptr.dtype.element_ty)  # Σ_{t' > t} dS_t'
    for i in range(T):
        t = T - 1 - i
        xt = tl.load(x_ptr + ob[:, None] * T * D + t * D + od[None, :], mask=m2, other=0.0)
        yt = tl.load(y_ptr + ob * T + t, mask=mb, other=0.0)
        s -= yt[:, None] * xt  # now Σ_{m < t} y_m x_m
        dx = yt[:, None] * r
        dy = tl.sum(xt * r, axis=1)
        if t > 0:
            ds = tl.zeros([BLOCK_B, BLOCK_D], dtype=x_ptr.dtype.element_ty)
            for h in range(H):
                g = tl.load(g_ptr + h * D * D + od[:, None] * D + od[None, :], mask=mg, other=0.0)
                go = tl.load(dout_ptr + ob * (T - 1) * H + (t - 1) * H + h, mask=mb,
                             other=0.0) / t  # [BB]
                ds += go[:, None] * tl.sum(g[None, :, :] * xt[:, None, :], axis=2)
                dx += go[:, None] * tl.sum(g[None, :, :] * s[:, :, None], axis=1)
            r += ds
        tl.store(dx_ptr + ob[:, None] * T * D + t * D + od[None, :], dx, mask=m2)
        tl.store(dy_ptr + ob * T + t, dy, mask=mb)


def _next_bwd_gamma(x_ptr, y_ptr, dout_ptr, dg_ptr, B, T, D, H, P,
                    BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    h = tl.program_id(1)
    od = tl.arange(0, BLOCK_D)
    md = od < D
    nblk = tl.cdiv(B, BLOCK_B)
    acc = tl.zeros([BLOCK_D, BLOCK_D], dtype=dg_ptr.dtype.element_ty)
    for blk in range(pid, nblk, P):
        ob = (blk * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
        mb = ob < B
        m2 = mb[:, None] & md[None, :]
        s = tl.zeros([BLOCK_B, BLOCK_D], dtype=dg_ptr.dtype.element_ty)
        for t in range(T):
            xt = tl.load(x_ptr + ob[:, None] * T * D + t * D + od[None, :], mask=m2, other=0.0)
            yt = tl.load(y_ptr + ob * T + t, mask=mb, other=0.0)
            if t > 0:
                go = tl.load(dout_ptr + ob * (T - 1) * H + (t - 1) * H + h, mask=mb,
                             other=0.0) / t
                acc += tl.sum((go[:, None] * s)[:, :, None] * xt[:, None, :], axis=0)
            s += yt[:, None] * xt
    tl.store(dg_ptr + (pid.to(tl.int64) * H + h) * BLOCK_D * BLOCK_D
             + od[:, None] * BLOCK_D + od[None, :], acc)


_k_readout_fwd = TritonKernel(_readout_fwd)
_k_context_bwd = TritonKernel(_context_bwd)
_k_next_fwd = TritonKernel(_next_fwd)
_k_next_bwd_inputs = TritonKernel(_next_bwd_inputs)
_k_next_bwd_gamma = TritonKernel(_next_bwd_gamma)


def _blocks(b: int, n: int, d: int, dtype: torch.dtype, block_n: int | None = None
            ) -> tuple[int, int, int]:
    bd = block_size(d)
    bn = block_size(block_n) if block_n else max(1, min(block_size(n), 32, _budget(dtype) // bd))
    bb = max(1, min(block_size(b), _budget(dtype) // (bd * max(bd, bn))))
    return bb, bn, bd


def icl_readout_forward(x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor, gamma: torch.Tensor,
                        block_n: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(ŷ [B, H], β [B, D]); inputs of one dtype (float32 or float64).

    ``block_n`` overrides the context tokens per step (tests use it to force several steps).
    """
    x, y, x_q, gamma = x.contiguous(), y.contiguous(), x_q.contiguous(), gamma.contiguous()
    b, n, d = x.shape
    h = gamma.shape[0]
    out = torch.empty(b, h, dtype=x.dtype, device=x.device)
    beta = torch.empty(b, d, dtype=x.dtype, device=x.device)
    bb, bn, bd = _blocks(b, n, d, x.dtype, block_n)
    if block_n is None:
        bn = max(1, bn // 2)  # half the context's step: the full tile spilled at D = 4
    _k_readout_fwd[(triton.cdiv(b, bb),)](x, y, x_q, gamma, out, beta, b, n, d, h,
                                          BLOCK_B=bb, BLOCK_N=bn, BLOCK_D=bd)
    return out, beta


def icl_readout_backward(dout, x, y, x_q, gamma, beta):
    """(dx [B, N, D], dy [B, N], dx_q [B, D], dgamma [H, D, D]) given the saved β."""
    x, y = x.contiguous(), y.contiguous()
    b, n, d = x.shape
    dbeta, dxq, dgamma = bilinear_backward(dout, beta, x_q, gamma)
    dx = torch.empty_like(x)
    dy = torch.empty_like(y)
    bb, bn, bd = _blocks(b, n, d, x.dtype)
    bb = max(1, bb // 2)  # the backward holds dx and x tiles at once: half the forward's rows
    _k_context_bwd[(triton.cdiv(b, bb),)](x, y, dbeta, dx, dy, b, n, d,
                                          BLOCK_B=bb, BLOCK_N=bn, BLOCK_D=bd)
    return dx, dy, dxq, dgamma


def _next_blocks(b: int, d: int, dtype: torch.dtype, device) -> tuple[int, int, int]:
    """(BLOCK_B, BLOCK_D, num_warps): 8 warps at D = 64 (the [D, D] prefix-sum tiles alone fill
    4 warps' registers), 2 while the [BLOCK_B, BLOCK_D, BLOCK_D] broadcast holds at most 2048
    4-byte registers (4 warps held a few elements a thread, and ptxas spilled around float64's
    division call); README.md, "Resources"."""
    bd = block_size(d)
    bb = block_rows(b, _budget(dtype) // (bd * bd), device)
    return bb, bd, 8 if bd >= 64 else 2 if _units(bb, bd, dtype) <= 2048 else 4


def _units(bb: int, bd: int, dtype: torch.dtype) -> int:
    """4-byte registers of a [bb, bd, bd] broadcast."""
    return bb * bd * bd * dtype.itemsize // 4


def icl_readout_next_token_forward(x: torch.Tensor, y: torch.Tensor, gamma: torch.Tensor
                                   ) -> torch.Tensor:
    """[B, T−1, H] next-token predictions (prefix sums in registers)."""
    x, y, gamma = x.contiguous(), y.contiguous(), gamma.contiguous()
    b, t, d = x.shape
    h = gamma.shape[0]
    out = torch.empty(b, t - 1, h, dtype=x.dtype, device=x.device)
    bb, bd, warps = _next_blocks(b, d, x.dtype, x.device)
    _k_next_fwd[(triton.cdiv(b, bb),)](x, y, gamma, out, b, t, d, h, BLOCK_B=bb, BLOCK_D=bd,
                                       num_warps=warps)
    return out


def icl_readout_next_token_backward(dout, x, y, gamma):
    """(dx [B, T, D], dy [B, T], dgamma [H, D, D])."""
    dout, x, y, gamma = dout.contiguous(), x.contiguous(), y.contiguous(), gamma.contiguous()
    b, t, d = x.shape
    h = gamma.shape[0]
    bb, bd, warps = _next_blocks(b, d, x.dtype, x.device)
    nblk = triton.cdiv(b, bb)
    dx = torch.empty_like(x)
    dy = torch.empty_like(y)
    # its four [BLOCK_B, BLOCK_D] tiles and two broadcasts spilled on 4 warps from 8192 registers
    _k_next_bwd_inputs[(nblk,)](x, y, gamma, dout, dx, dy, b, t, d, h, BLOCK_B=bb, BLOCK_D=bd,
                                num_warps=8 if _units(bb, bd, x.dtype) >= 8192 else warps)
    p = persistent_programs(nblk, x.device)
    part = torch.empty(p, h, bd, bd, dtype=x.dtype, device=x.device)
    _k_next_bwd_gamma[(p, h)](x, y, dout, part, b, t, d, h, p, BLOCK_B=bb, BLOCK_D=bd,
                              num_warps=warps)
    return dx, dy, part.sum(0)[:, :d, :d].contiguous()
