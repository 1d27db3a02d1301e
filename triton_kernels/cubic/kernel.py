"""Triton kernels for the batched bilinear form hidden[b, h] = βᵀ G_h x_q and its backward.

The cubic feature z = (β x_qᵀ).flatten() is never formed. Two sets of kernels:

- broadcast (any D, float32 and float64: the interpreter has no float64 ``tl.dot``):
  contractions are sums of broadcasts, one row of G_h at a time (the forward at D <= 8 takes the
  whole block), so a program's working set is [BLOCK_B, D] and G is read once per program;
- tiled (float32, D >= 32): per head, β G_h and x_q G_hᵀ as ``tl.dot`` of a [BLOCK_B, D] tile
  with the [D, D] block, and dG_h = Σ_b (g_bh β_b) x_q,bᵀ as a [D, BLOCK_B] x [BLOCK_B, D] dot,
  on tensor cores (README).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._launch import (
    TritonKernel,
    block_rows,
    block_size,
    compiled_for_gpu,
    dot_precision,
    persistent_programs,
    register_budget,
)

__all__ = ["bilinear_backward", "bilinear_forward", "cubic_hidden_backward", "cubic_hidden_forward"]


# The forward takes a head's whole [D, D] block at once up to this D (faster there on an H100),
# one row at a time above it (README, "Measured on H100")
_WHOLE_G_MAX_D = 8


def _budget(dtype: torch.dtype) -> int:
    return register_budget(dtype, 1 << 16)


def _bilinear_fwd(beta_ptr, xq_ptr, g_ptr, out_ptr, B, D, H,
                  BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, WHOLE_G: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb = ob < B
    md = od < D
    m2 = mb[:, None] & md[None, :]
    xq = tl.load(xq_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
    if WHOLE_G:  # small D: G_h as one [BD, BD] tile against a [BB, BD, BD] broadcast
        beta = tl.load(beta_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)
        mg = md[:, None] & md[None, :]
        for h in range(H):
            g = tl.load(g_ptr + h * D * D + od[:, None] * D + od[None, :], mask=mg, other=0.0)
            gx = tl.sum(g[None, :, :] * xq[:, None, :], axis=2)  # [BB, BD]
            tl.store(out_ptr + ob * H + h, tl.sum(beta * gx, axis=1), mask=mb)
    else:
        for h in range(H):
            o = tl.zeros([BLOCK_B], dtype=xq.dtype)
            for i in range(D):
                g_row = tl.load(g_ptr + h * D * D + i * D + od, mask=md, other=0.0)  # G_h[i, :]
                beta_i = tl.load(beta_ptr + ob * D + i, mask=mb, other=0.0)  # [BB] (cached)
                o += beta_i * tl.sum(xq * g_row[None, :], axis=1)
            tl.store(out_ptr + ob * H + h, o, mask=mb)


def _bilinear_bwd(beta_ptr, xq_ptr, g_ptr, dout_ptr, dbeta_ptr, dxq_ptr, dg_ptr, B, D, H, P,
                  BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    od = tl.arange(0, BLOCK_D)
    md = od < D
    part = dg_ptr + pid.to(tl.int64) * H * D * D  # this program's partial dG [H, D, D]
    for r in range(H * D):
        tl.store(part + r * D + od, tl.zeros([BLOCK_D], dtype=dg_ptr.dtype.element_ty), mask=md)
    nblk = tl.cdiv(B, BLOCK_B)
    for blk in range(pid, nblk, P):
        ob = (blk * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
        mb = ob < B
        m2 = mb[:, None] & md[None, :]
        xq = tl.load(xq_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
        dxq = tl.zeros([BLOCK_B, BLOCK_D], dtype=xq.dtype)
        for i in range(D):
            beta_i = tl.load(beta_ptr + ob * D + i, mask=mb, other=0.0)  # [BB]
            dbeta_i = tl.zeros([BLOCK_B], dtype=xq.dtype)
            for h in range(H):
                go = tl.load(dout_ptr + ob * H + h, mask=mb, other=0.0)  # [BB]
                g_row = tl.load(g_ptr + h * D * D + i * D + od, mask=md, other=0.0)  # [BD]
                dbeta_i += go * tl.sum(xq * g_row[None, :], axis=1)
                gb = go * beta_i  # [BB]
                dxq += gb[:, None] * g_row[None, :]
                # the same program read-modify-writes this row once per block (no atomics)
                row = part + h * D * D + i * D + od
                tl.store(row, tl.load(row, mask=md, other=0.0) + tl.sum(gb[:, None] * xq, axis=0),
                         mask=md)
            tl.store(dbeta_ptr + ob * D + i, dbeta_i, mask=mb)
        tl.store(dxq_ptr + ob[:, None] * D + od[None, :], dxq, mask=m2)


def _bilinear_dot_fwd(beta_ptr, xq_ptr, g_ptr, out_ptr, B, D, H,
                      BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb, md = ob < B, od < D
    m2 = mb[:, None] & md[None, :]
    beta = tl.load(beta_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
    xq = tl.load(xq_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)
    mg = md[:, None] & md[None, :]
    for h in range(H):
        g = tl.load(g_ptr + h * D * D + od[:, None] * D + od[None, :], mask=mg, other=0.0)
        bg = tl.dot(beta, g, input_precision=PRECISION)  # [BB, BD]: β_bᵀ G_h
        tl.store(out_ptr + ob * H + h, tl.sum(bg * xq, axis=1), mask=mb)


def _bilinear_dot_bwd_inputs(beta_ptr, xq_ptr, g_ptr, dout_ptr, dbeta_ptr, dxq_ptr, B, D, H,
                             BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr,
                             PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb, md = ob < B, od < D
    m2 = mb[:, None] & md[None, :]
    beta = tl.load(beta_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
    xq = tl.load(xq_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)
    mg = md[:, None] & md[None, :]
    dbeta = tl.zeros([BLOCK_B, BLOCK_D], dtype=tl.float32)
    dxq = tl.zeros([BLOCK_B, BLOCK_D], dtype=tl.float32)
    for h in range(H):
        g = tl.load(g_ptr + h * D * D + od[:, None] * D + od[None, :], mask=mg, other=0.0)
        go = tl.load(dout_ptr + ob * H + h, mask=mb, other=0.0)  # [BB]
        dbeta += go[:, None] * tl.dot(xq, tl.trans(g), input_precision=PRECISION)  # G_h x_q
        dxq += go[:, None] * tl.dot(beta, g, input_precision=PRECISION)  # G_hᵀ β
    tl.store(dbeta_ptr + ob[:, None] * D + od[None, :], dbeta, mask=m2)
    tl.store(dxq_ptr + ob[:, None] * D + od[None, :], dxq, mask=m2)


def _bilinear_dot_bwd_g(beta_ptr, xq_ptr, dout_ptr, dg_ptr, B, D, H, P,
                        BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    h = tl.program_id(1)
    od = tl.arange(0, BLOCK_D)
    md = od < D
    acc = tl.zeros([BLOCK_D, BLOCK_D], dtype=tl.float32)
    for blk in range(pid, tl.cdiv(B, BLOCK_B), P):     # this program's batch blocks, in order
        ob = (blk * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
        mb = ob < B
        m2 = mb[:, None] & md[None, :]
        beta = tl.load(beta_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)
        xq = tl.load(xq_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)
        go = tl.load(dout_ptr + ob * H + h, mask=mb, other=0.0)
        acc += tl.dot(tl.trans(beta * go[:, None]), xq, input_precision=PRECISION)  # [BD, BD]
    tl.store(dg_ptr + ((pid.to(tl.int64) * H + h) * D + od[:, None]) * D + od[None, :], acc,
             mask=md[:, None] & md[None, :])


_fwd = TritonKernel(_bilinear_fwd)
_bwd = TritonKernel(_bilinear_bwd)
_dot_fwd = TritonKernel(_bilinear_dot_fwd)
_dot_bwd_inputs = TritonKernel(_bilinear_dot_bwd_inputs)
_dot_bwd_g = TritonKernel(_bilinear_dot_bwd_g)

#: the tiled kernels from this D on (float32): below it the broadcast kernels measured faster than
#: the reference on the GPU (README), and a [D, D] tile is under half a tensor-core tile
_TILED_MIN_D = 32


def _use_tiled(d: int, dtype: torch.dtype, tiled: bool | None) -> bool:
    """Whether the launchers run the tiled ``tl.dot`` kernels: by default at float32 and
    D >= :data:`_TILED_MIN_D`; ``tiled`` forces either (tests compare the two)."""
    if tiled is None:
        return dtype == torch.float32 and d >= _TILED_MIN_D
    if tiled and dtype != torch.float32:
        raise ValueError(f"tiled=True needs float32 inputs; got {str(dtype).removeprefix('torch.')}"
                         ": pass tiled=None")
    return tiled


def _dot_blocks(b: int, d: int, device) -> dict:
    """Constexprs of the tiled kernels: D padded to 16 (``tl.dot``'s smallest operand), 32 rows
    per program on 8 warps with one pipeline stage compiled (16 rows under the interpreter): at
    D = 64 the largest blocks with no spill (no stack frame) for sm_80 and sm_90 in the AOT report;
    64 rows spilled up to 7.5 KB a thread on sm_80 (README)."""
    rows = 32 if compiled_for_gpu(device) else 16
    return {"BLOCK_B": min(rows, block_size(b, 16)), "BLOCK_D": block_size(d, 16),
            "PRECISION": dot_precision(torch.float32, device), "num_warps": 8, "num_stages": 1}


def bilinear_forward(beta: torch.Tensor, x_q: torch.Tensor, g: torch.Tensor,
                     tiled: bool | None = None) -> torch.Tensor:
    """out[b, h] = beta[b]ᵀ g[h] x_q[b]; beta, x_q [B, D] and g [H, D, D] of one dtype (``tiled``:
    :func:`_use_tiled`)."""
    beta, x_q, g = beta.contiguous(), x_q.contiguous(), g.contiguous()
    b, d = beta.shape
    h = g.shape[0]
    out = torch.empty(b, h, dtype=beta.dtype, device=beta.device)
    if _use_tiled(d, beta.dtype, tiled):
        blocks = _dot_blocks(b, d, beta.device)
        _dot_fwd[(triton.cdiv(b, blocks["BLOCK_B"]),)](beta, x_q, g, out, b, d, h, **blocks)
        return out
    bd = block_size(d)
    whole_g = bd <= _WHOLE_G_MAX_D
    bb = block_rows(b, _budget(beta.dtype) // (bd * bd if whole_g else bd), beta.device)
    _fwd[(triton.cdiv(b, bb),)](beta, x_q, g, out, b, d, h, BLOCK_B=bb, BLOCK_D=bd,
                                WHOLE_G=whole_g)
    return out


def bilinear_backward(dout: torch.Tensor, beta: torch.Tensor, x_q: torch.Tensor, g: torch.Tensor,
                      tiled: bool | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (dbeta [B, D], dx_q [B, D], dg [H, D, D]) of sum(dout * bilinear_forward)."""
    dout, beta, x_q, g = dout.contiguous(), beta.contiguous(), x_q.contiguous(), g.contiguous()
    b, d = beta.shape
    h = g.shape[0]
    if _use_tiled(d, beta.dtype, tiled):
        blocks = _dot_blocks(b, d, beta.device)
        nblk = triton.cdiv(b, blocks["BLOCK_B"])
        dbeta, dxq = torch.empty_like(beta), torch.empty_like(x_q)
        _dot_bwd_inputs[(nblk,)](beta, x_q, g, dout, dbeta, dxq, b, d, h, **blocks)
        p = max(1, persistent_programs(nblk, beta.device) // h)
        part = torch.empty(p, h, d, d, dtype=beta.dtype, device=beta.device)
        _dot_bwd_g[(p, h)](beta, x_q, dout, part, b, d, h, p, **blocks)
        return dbeta, dxq, part.sum(0)
    bd = block_size(d)
    # a 32nd of the forward's budget on 8 warps from 1024 4-byte registers a tile: the backward
    # keeps several [BLOCK_B, BLOCK_D] tiles live, and larger tiles or fewer warps spilled (README)
    bb = block_rows(b, _budget(beta.dtype) // (32 * bd), beta.device)
    warps = 8 if bb * bd * beta.dtype.itemsize // 4 >= 1024 else 4
    nblk = triton.cdiv(b, bb)
    p = persistent_programs(nblk, beta.device)
    dbeta = torch.empty_like(beta)
    dxq = torch.empty_like(x_q)
    part = torch.empty(p, h, d, d, dtype=beta.dtype, device=beta.device)
    _bwd[(p,)](beta, x_q, g, dout, dbeta, dxq, part, b, d, h, p, BLOCK_B=bb, BLOCK_D=bd,
               num_warps=warps)
    return dbeta, dxq, part.sum(0)


def cubic_hidden_forward(beta: torch.Tensor, x_q: torch.Tensor, w1: torch.Tensor,
                         tiled: bool | None = None) -> torch.Tensor:
    """hidden [B, H] = W1 z with z = (β x_qᵀ).flatten(); W1 [H, D*D]."""
    d = beta.shape[1]
    return bilinear_forward(beta, x_q, w1.reshape(-1, d, d), tiled)


def cubic_hidden_backward(dout, beta, x_q, w1, tiled: bool | None = None):
    """(dbeta, dx_q, dW1 [H, D*D]) for :func:`cubic_hidden_forward`."""
    d = beta.shape[1]
    dbeta, dxq, dg = bilinear_backward(dout, beta, x_q, w1.reshape(-1, d, d), tiled)
    return dbeta, dxq, dg.reshape(w1.shape[0], d * d)
