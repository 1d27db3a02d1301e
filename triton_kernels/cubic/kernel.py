"""Triton kernels for the batched bilinear form hidden[b, h] = βᵀ G_h x_q and its backward.

The cubic feature z = (β x_qᵀ).flatten() is never formed. No ``tl.dot`` (D may be below 16 and
float64 must run under the interpreter): contractions are sums of broadcasts.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._launch import TritonKernel, block_size, interpreting

__all__ = ["bilinear_backward", "bilinear_forward", "cubic_hidden_backward", "cubic_hidden_forward"]


def _budget() -> int:
    return 1 << 16 if interpreting() else 1 << 12


def _num_programs(nblk: int, device: torch.device) -> int:
    if device.type == "cuda":
        return max(1, min(nblk, 4 * torch.cuda.get_device_properties(device).multi_processor_count))
    return max(1, min(nblk, 4))


def _bilinear_fwd(beta_ptr, xq_ptr, g_ptr, out_ptr, B, D, H,
                  BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    od = tl.arange(0, BLOCK_D)
    mb = ob < B
    md = od < D
    m2 = mb[:, None] & md[None, :]
    beta = tl.load(beta_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
    xq = tl.load(xq_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
    mg = md[:, None] & md[None, :]
    for h in range(H):
        g = tl.load(g_ptr + h * D * D + od[:, None] * D + od[None, :], mask=mg, other=0.0)  # [BD, BD]
        gx = tl.sum(g[None, :, :] * xq[:, None, :], axis=2)  # [BB, BD]
        o = tl.sum(beta * gx, axis=1)  # [BB]
        tl.store(out_ptr + ob * H + h, o, mask=mb)


def _bilinear_bwd(beta_ptr, xq_ptr, g_ptr, dout_ptr, dbeta_ptr, dxq_ptr, dg_ptr, B, D, H, P,
                  BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    od = tl.arange(0, BLOCK_D)
    md = od < D
    mg = md[:, None] & md[None, :]
    part = dg_ptr + pid.to(tl.int64) * H * BLOCK_D * BLOCK_D + od[:, None] * BLOCK_D + od[None, :]
    zero = tl.zeros([BLOCK_D, BLOCK_D], dtype=dg_ptr.dtype.element_ty)
    for h in range(H):
        tl.store(part + h * BLOCK_D * BLOCK_D, zero)
    nblk = tl.cdiv(B, BLOCK_B)
    for blk in range(pid, nblk, P):
        ob = (blk * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
        mb = ob < B
        m2 = mb[:, None] & md[None, :]
        beta = tl.load(beta_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
        xq = tl.load(xq_ptr + ob[:, None] * D + od[None, :], mask=m2, other=0.0)  # [BB, BD]
        dbeta = tl.zeros([BLOCK_B, BLOCK_D], dtype=beta.dtype)
        dxq = tl.zeros([BLOCK_B, BLOCK_D], dtype=beta.dtype)
        for h in range(H):
            g = tl.load(g_ptr + h * D * D + od[:, None] * D + od[None, :], mask=mg, other=0.0)
            go = tl.load(dout_ptr + ob * H + h, mask=mb, other=0.0)  # [BB]
            dbeta += go[:, None] * tl.sum(g[None, :, :] * xq[:, None, :], axis=2)
            dxq += go[:, None] * tl.sum(g[None, :, :] * beta[:, :, None], axis=1)
            gb = go[:, None] * beta  # [BB, BD]
            acc = tl.load(part + h * BLOCK_D * BLOCK_D)
            tl.store(part + h * BLOCK_D * BLOCK_D,
                     acc + tl.sum(gb[:, :, None] * xq[:, None, :], axis=0))
        tl.store(dbeta_ptr + ob[:, None] * D + od[None, :], dbeta, mask=m2)
        tl.store(dxq_ptr + ob[:, None] * D + od[None, :], dxq, mask=m2)


_fwd = TritonKernel(_bilinear_fwd)
_bwd = TritonKernel(_bilinear_bwd)


def _block_b(b: int, bd: int) -> int:
    return max(1, min(block_size(b), _budget() // (bd * bd)))


def bilinear_forward(beta: torch.Tensor, x_q: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """out[b, h] = beta[b]ᵀ g[h] x_q[b]; beta, x_q [B, D] and g [H, D, D] contiguous, same dtype."""
    b, d = beta.shape
    h = g.shape[0]
    out = torch.empty(b, h, dtype=beta.dtype, device=beta.device)
    bd = block_size(d)
    bb = _block_b(b, bd)
    _fwd[(triton.cdiv(b, bb),)](beta, x_q, g, out, b, d, h, BLOCK_B=bb, BLOCK_D=bd)
    return out


def bilinear_backward(dout: torch.Tensor, beta: torch.Tensor, x_q: torch.Tensor, g: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (dbeta [B, D], dx_q [B, D], dg [H, D, D]) of sum(dout * bilinear_forward)."""
    b, d = beta.shape
    h = g.shape[0]
    bd = block_size(d)
    bb = _block_b(b, bd)
    nblk = triton.cdiv(b, bb)
    p = _num_programs(nblk, beta.device)
    dbeta = torch.empty_like(beta)
    dxq = torch.empty_like(x_q)
    part = torch.empty(p, h, bd, bd, dtype=beta.dtype, device=beta.device)
    _bwd[(p,)](beta, x_q, g, dout.contiguous(), dbeta, dxq, part, b, d, h, p,
               BLOCK_B=bb, BLOCK_D=bd)
    return dbeta, dxq, part.sum(0)[:, :d, :d].contiguous()


def cubic_hidden_forward(beta: torch.Tensor, x_q: torch.Tensor, w1: torch.Tensor) -> torch.Tensor:
    """hidden [B, H] = W1 z with z = (β x_qᵀ).flatten(); W1 [H, D*D]."""
    d = beta.shape[1]
    return bilinear_forward(beta, x_q, w1.reshape(-1, d, d))


def cubic_hidden_backward(dout, beta, x_q, w1):
    """(dbeta, dx_q, dW1 [H, D*D]) for :func:`cubic_hidden_forward`."""
    d = beta.shape[1]
    dbeta, dxq, dg = bilinear_backward(dout, beta, x_q, w1.reshape(-1, d, d))
    return dbeta, dxq, dg.reshape(w1.shape[0], d * d)
