"""Triton kernels for single-query softmax attention: online softmax over the keys.

Forward: one program per (BLOCK_B sequences, head). Backward: one program holds every head of
BLOCK_B sequences, so shared keys and values are read once for all heads and their gradients are
summed over heads in registers (no atomics, no read-modify-write of global memory). The
forward's one-head programs measured faster on an H100 than an all-heads forward (README).
No ``tl.dot``: these run float64, per-head keys and K < 64.

Tiled kernels (float32, keys shared by the heads, K >= 64): one program per sequence holds its H
queries as a [BLOCK_H >= 16, K] matrix, so the scores S = Q Kᵀ of a key block, O += P V and the
backward's dq, dk, dv are ``tl.dot`` on tensor cores, and each key is read once for all heads.
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
    interpreting,
    register_budget,
)

__all__ = ["single_query_attention_backward", "single_query_attention_forward"]


def _sqa_fwd(q_ptr, k_ptr, v_ptr, scale_ptr, out_ptr, lse_ptr, B, H, M, K, V, stride_kb, stride_kh,
             BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
             BLOCK_V: tl.constexpr):
    pid = tl.program_id(0)
    h = tl.program_id(1)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    ok = tl.arange(0, BLOCK_K)
    ov = tl.arange(0, BLOCK_V)
    mb = ob < B
    mk = ok < K
    mv = ov < V
    scale = tl.load(scale_ptr)
    q = tl.load(q_ptr + ob[:, None] * H * K + h * K + ok[None, :], mask=mb[:, None] & mk[None, :],
                other=0.0)  # [BB, BK]
    m_i = tl.full([BLOCK_B], float("-inf"), dtype=q.dtype)
    l_i = tl.zeros([BLOCK_B], dtype=q.dtype)
    acc = tl.zeros([BLOCK_B, BLOCK_V], dtype=q.dtype)
    for m0 in range(0, M, BLOCK_M):
        om = m0 + tl.arange(0, BLOCK_M)
        mm = om < M
        kk = tl.load(k_ptr + ob[:, None, None] * stride_kb + h * stride_kh + om[None, :, None] * K
                     + ok[None, None, :],
                     mask=mb[:, None, None] & mm[None, :, None] & mk[None, None, :],
                     other=0.0)  # [BB, BM, BK]
        vv = tl.load(v_ptr + ob[:, None, None] * M * V + om[None, :, None] * V + ov[None, None, :],
                     mask=mb[:, None, None] & mm[None, :, None] & mv[None, None, :],
                     other=0.0)  # [BB, BM, BV]
        s = tl.sum(q[:, None, :] * kk, axis=2) * scale  # [BB, BM]
        s = tl.where(mm[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])  # [BB, BM]
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * vv, axis=1)
        m_i = m_new
    tl.store(out_ptr + ob[:, None] * H * V + h * V + ov[None, :], acc / l_i[:, None],
             mask=mb[:, None] & mv[None, :])
    tl.store(lse_ptr + ob * H + h, m_i + tl.log(l_i), mask=mb)


def _sqa_bwd(q_ptr, k_ptr, v_ptr, scale_ptr, out_ptr, lse_ptr, do_ptr, dq_ptr, dk_ptr, dv_ptr,
             B, H, M, K, V, stride_kb, stride_kh,
             BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_M: tl.constexpr,
             BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr, SHARED_K: tl.constexpr):
    pid = tl.program_id(0)
    ob = (pid * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    oh = tl.arange(0, BLOCK_H)
    ok = tl.arange(0, BLOCK_K)
    ov = tl.arange(0, BLOCK_V)
    mb = ob < B
    mh = oh < H
    mk = ok < K
    mv = ov < V
    mbh = mb[:, None] & mh[None, :]
    mbhk = mbh[:, :, None] & mk[None, None, :]
    mbhv = mbh[:, :, None] & mv[None, None, :]
    scale = tl.load(scale_ptr)
    offq = (ob[:, None, None] * H + oh[None, :, None]) * K + ok[None, None, :]
    offo = (ob[:, None, None] * H + oh[None, :, None]) * V + ov[None, None, :]
    q = tl.load(q_ptr + offq, mask=mbhk, other=0.0)  # [BB, BH, BK]
    o = tl.load(out_ptr + offo, mask=mbhv, other=0.0)  # [BB, BH, BV]
    do = tl.load(do_ptr + offo, mask=mbhv, other=0.0)
    lse = tl.load(lse_ptr + ob[:, None] * H + oh[None, :], mask=mbh, other=0.0)  # [BB, BH]
    delta = tl.sum(do * o, axis=2)  # [BB, BH]
    dq = tl.zeros([BLOCK_B, BLOCK_H, BLOCK_K], dtype=q.dtype)
    for m0 in range(0, M, BLOCK_M):
        om = m0 + tl.arange(0, BLOCK_M)
        mm = om < M
        m3v = mb[:, None, None] & mm[None, :, None] & mv[None, None, :]
        offv = ob[:, None, None] * M * V + om[None, :, None] * V + ov[None, None, :]
        vv = tl.load(v_ptr + offv, mask=m3v, other=0.0)  # [BB, BM, BV]
        if SHARED_K:
            m3k = mb[:, None, None] & mm[None, :, None] & mk[None, None, :]
            offk = ob[:, None, None] * stride_kb + om[None, :, None] * K + ok[None, None, :]
            kk = tl.load(k_ptr + offk, mask=m3k, other=0.0)  # [BB, BM, BK]
            s = tl.sum(q[:, :, None, :] * kk[:, None, :, :], axis=3)  # [BB, BH, BM]
        else:
            m4k = mbh[:, :, None, None] & mm[None, None, :, None] & mk[None, None, None, :]
            offk = ob[:, None, None, None] * stride_kb + oh[None, :, None, None] * stride_kh \
                + om[None, None, :, None] * K + ok[None, None, None, :]
            kk = tl.load(k_ptr + offk, mask=m4k, other=0.0)  # [BB, BH, BM, BK]
            s = tl.sum(q[:, :, None, :] * kk, axis=3)
        live = mbh[:, :, None] & mm[None, None, :]
        p = tl.where(live, tl.exp(s * scale - lse[:, :, None]), 0.0)  # [BB, BH, BM]
        dp = tl.sum(do[:, :, None, :] * vv[:, None, :, :], axis=3)  # [BB, BH, BM]
        ds = p * (dp - delta[:, :, None]) * scale
        # shared keys and values: the gradients are summed over heads here, in registers
        if SHARED_K:
            dq += tl.sum(ds[:, :, :, None] * kk[:, None, :, :], axis=2)
            tl.store(dk_ptr + offk, tl.sum(ds[:, :, :, None] * q[:, :, None, :], axis=1),
                     mask=m3k)
        else:
            dq += tl.sum(ds[:, :, :, None] * kk, axis=2)
            tl.store(dk_ptr + offk, ds[:, :, :, None] * q[:, :, None, :], mask=m4k)
        tl.store(dv_ptr + offv, tl.sum(p[:, :, :, None] * do[:, :, None, :], axis=1), mask=m3v)
    tl.store(dq_ptr + offq, dq, mask=mbhk)


def _sqa_dot_fwd(q_ptr, k_ptr, v_ptr, scale_ptr, out_ptr, lse_ptr, H, M, K, V,
                 BLOCK_H: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
                 BLOCK_V: tl.constexpr, PRECISION: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    oh = tl.arange(0, BLOCK_H)
    ok = tl.arange(0, BLOCK_K)
    ov = tl.arange(0, BLOCK_V)
    mh = oh < H
    mk = ok < K
    mv = ov < V
    scale = tl.load(scale_ptr)
    q = tl.load(q_ptr + (b * H + oh[:, None]) * K + ok[None, :], mask=mh[:, None] & mk[None, :],
                other=0.0)  # [BH, BK]: rows past H are zero (tl.dot needs 16)
    m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, BLOCK_V], dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        om = m0 + tl.arange(0, BLOCK_M)
        mm = om < M
        kk = tl.load(k_ptr + (b * M + om[:, None]) * K + ok[None, :],
                     mask=mm[:, None] & mk[None, :], other=0.0)  # [BM, BK]
        vv = tl.load(v_ptr + (b * M + om[:, None]) * V + ov[None, :],
                     mask=mm[:, None] & mv[None, :], other=0.0)  # [BM, BV]
        s = tl.dot(q, tl.trans(kk), input_precision=PRECISION) * scale  # [BH, BM]
        s = tl.where(mm[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, vv, input_precision=PRECISION)
        m_i = m_new
    tl.store(out_ptr + (b * H + oh[:, None]) * V + ov[None, :], acc / l_i[:, None],
             mask=mh[:, None] & mv[None, :])
    tl.store(lse_ptr + b * H + oh, m_i + tl.log(l_i), mask=mh)


def _sqa_dot_bwd(q_ptr, k_ptr, v_ptr, scale_ptr, out_ptr, lse_ptr, do_ptr, dq_ptr, dk_ptr, dv_ptr,
                 H, M, K, V, BLOCK_H: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr, PRECISION: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    oh = tl.arange(0, BLOCK_H)
    ok = tl.arange(0, BLOCK_K)
    ov = tl.arange(0, BLOCK_V)
    mh = oh < H
    mk = ok < K
    mv = ov < V
    scale = tl.load(scale_ptr)
    offq = (b * H + oh[:, None]) * K + ok[None, :]
    offo = (b * H + oh[:, None]) * V + ov[None, :]
    q = tl.load(q_ptr + offq, mask=mh[:, None] & mk[None, :], other=0.0)  # [BH, BK]
    o = tl.load(out_ptr + offo, mask=mh[:, None] & mv[None, :], other=0.0)  # [BH, BV]
    do = tl.load(do_ptr + offo, mask=mh[:, None] & mv[None, :], other=0.0)
    lse = tl.load(lse_ptr + b * H + oh, mask=mh, other=0.0)  # [BH]
    delta = tl.sum(do * o, axis=1)  # [BH]
    dq = tl.zeros([BLOCK_H, BLOCK_K], dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        om = m0 + tl.arange(0, BLOCK_M)
        mm = om < M
        offk = (b * M + om[:, None]) * K + ok[None, :]
        offv = (b * M + om[:, None]) * V + ov[None, :]
        kk = tl.load(k_ptr + offk, mask=mm[:, None] & mk[None, :], other=0.0)  # [BM, BK]
        vv = tl.load(v_ptr + offv, mask=mm[:, None] & mv[None, :], other=0.0)  # [BM, BV]
        s = tl.dot(q, tl.trans(kk), input_precision=PRECISION)  # [BH, BM]
        # a padded key has s = 0, and exp(0 - lse) overflows when every score is far below 0
        # (inf * 0 = NaN in dq); padded heads have q = dO = 0 and add nothing
        p = tl.where(mm[None, :], tl.exp(s * scale - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(vv), input_precision=PRECISION)  # [BH, BM]
        ds = p * (dp - delta[:, None]) * scale
        dq += tl.dot(ds, kk, input_precision=PRECISION)
        # this program owns the sequence's keys: dk, dv summed over heads by the dot, no atomics
        tl.store(dk_ptr + offk, tl.dot(tl.trans(ds), q, input_precision=PRECISION),
                 mask=mm[:, None] & mk[None, :])
        tl.store(dv_ptr + offv, tl.dot(tl.trans(p), do, input_precision=PRECISION),
                 mask=mm[:, None] & mv[None, :])
    tl.store(dq_ptr + offq, dq, mask=mh[:, None] & mk[None, :])


_k_fwd = TritonKernel(_sqa_fwd)
_k_bwd = TritonKernel(_sqa_bwd)
_k_dot_fwd = TritonKernel(_sqa_dot_fwd)
_k_dot_bwd = TritonKernel(_sqa_dot_bwd)


def _fwd_blocks(b: int, m: int, kdim: int, vdim: int, dtype: torch.dtype, block_m: int | None
                ) -> tuple[int, int, int, int]:
    """(BLOCK_B, BLOCK_M, BLOCK_K, BLOCK_V) of the forward, one head per program; the
    [BLOCK_B, BLOCK_M, max(BLOCK_K, BLOCK_V)] temporaries within 8192 float32 elements (README)."""
    budget = register_budget(dtype, 1 << 13)
    bk, bv = block_size(kdim), block_size(vdim)
    bb = max(1, min(block_size(b), 8 if not interpreting() else 256))
    bm = max(1, min(block_size(m), budget // (bb * max(bk, bv))))
    if block_m is not None:
        bm = block_size(block_m)
    return bb, bm, bk, bv


def _bwd_blocks(b: int, h: int, m: int, kdim: int, vdim: int, dtype: torch.dtype, device,
                block_m: int | None) -> tuple[int, int, int, int, int]:
    """(BLOCK_B, BLOCK_H, BLOCK_M, BLOCK_K, BLOCK_V) of the backward, every head of BLOCK_B
    sequences in one program; the [BB, BH, BM, max(BK, BV)] temporaries fit the register
    budget (4096 float32 elements compiled: README)."""
    budget = register_budget(dtype, 1 << 12)
    bh, bk, bv = block_size(h), block_size(kdim), block_size(vdim)
    width = bh * max(bk, bv)
    bm = block_size(block_m) if block_m is not None else max(1, min(block_size(m), 64,
                                                                   budget // width))
    bb = block_rows(b, max(1, budget // (width * bm)), device)
    return bb, bh, bm, bk, bv


def _strides(k: torch.Tensor, h: int) -> tuple[int, int]:
    if k.dim() == 3:
        return k.shape[1] * k.shape[2], 0
    return h * k.shape[2] * k.shape[3], k.shape[2] * k.shape[3]



def _use_tiled(k: torch.Tensor, dtype: torch.dtype, tiled: bool | None) -> bool:
    """Whether the launchers run the tiled ``tl.dot`` kernels: by default at float32, shared keys,
    K >= 64 (README: below, the broadcast kernels measured faster than the reference; per-head
    keys are one query per key set, a matrix-vector product with nothing for a tile to reuse)."""
    shared, kdim = k.dim() == 3, k.shape[-1]
    if tiled is None:
        return shared and dtype == torch.float32 and kdim >= 64
    if tiled and not (shared and dtype == torch.float32):
        raise ValueError("tiled=True needs float32 keys shared by the heads ([B, M, K]); got "
                         f"{str(dtype).removeprefix('torch.')} keys of shape {tuple(k.shape)}: "
                         "pass tiled=None")
    return tiled


def _dot_blocks(h: int, m: int, kdim: int, vdim: int, device, block_m: int | None,
                backward: bool = False) -> dict[str, int | str]:
    """Constexprs of the tiled kernels: every head in BLOCK_H >= 16 rows, K and V padded to 16
    (``tl.dot``'s smallest operand), BLOCK_M keys per step: 32 compiled with 2 pipeline stages
    (README: the AOT report's registers, shared memory and occupancy), 16 in the backward at
    K or V = 128 (its [BLOCK_M, 128] dk and dv tiles spilled at 32), up to 256 under the
    interpreter (each step is one more Python iteration)."""
    bk, bv = block_size(kdim, 16), block_size(vdim, 16)
    step = 16 if backward and max(bk, bv) >= 128 else 32
    bm = block_size(block_m, 16) if block_m is not None else \
        min(block_size(m, 16), step if compiled_for_gpu(device) else 256)
    return {"BLOCK_H": block_size(h, 16), "BLOCK_M": bm, "BLOCK_K": bk, "BLOCK_V": bv,
            "PRECISION": dot_precision(torch.float32, device), "num_stages": 2}


def single_query_attention_forward(q, k, v, scale: float, block_m: int | None = None,
                                   tiled: bool | None = None
                                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """(out [B, H, V], logsumexp [B, H]); q [B, H, K], k [B, M, K] or [B, H, M, K], v [B, M, V].

    ``block_m`` overrides the number of keys per online-softmax step (tests use it to force
    several steps); ``tiled`` forces the tiled ``tl.dot`` kernel (True) or the broadcast one
    (False) instead of the launcher's choice (None; tests compare the two).
    """
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    b, h, kdim = q.shape
    m, vdim = v.shape[1], v.shape[2]
    out = torch.empty(b, h, vdim, dtype=q.dtype, device=q.device)
    lse = torch.empty(b, h, dtype=q.dtype, device=q.device)
    scale_t = torch.full((1,), float(scale), dtype=q.dtype, device=q.device)
    if _use_tiled(k, q.dtype, tiled):
        _k_dot_fwd[(b,)](q, k, v, scale_t, out, lse, h, m, kdim, vdim,
                         **_dot_blocks(h, m, kdim, vdim, q.device, block_m))
        return out, lse
    bb, bm, bk, bv = _fwd_blocks(b, m, kdim, vdim, q.dtype, block_m)
    skb, skh = _strides(k, h)
    # float64's temporaries (two registers each) spilled on 4 warps at every planned shape
    _k_fwd[(triton.cdiv(b, bb), h)](q, k, v, scale_t, out, lse, b, h, m, kdim, vdim, skb, skh,
                                    BLOCK_B=bb, BLOCK_M=bm, BLOCK_K=bk, BLOCK_V=bv,
                                    num_warps=8 if q.dtype.itemsize > 4 else 4)
    return out, lse


def single_query_attention_backward(dout, q, k, v, scale: float, out, lse,
                                    block_m: int | None = None, tiled: bool | None = None):
    """(dq, dk, dv) with the shapes of (q, k, v); ``block_m``, ``tiled`` as in the forward (either
    kernel reads either forward's out and lse)."""
    dout, q, k, v = dout.contiguous(), q.contiguous(), k.contiguous(), v.contiguous()
    out, lse = out.contiguous(), lse.contiguous()
    b, h, kdim = q.shape
    m, vdim = v.shape[1], v.shape[2]
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    scale_t = torch.full((1,), float(scale), dtype=q.dtype, device=q.device)
    if _use_tiled(k, q.dtype, tiled):
        _k_dot_bwd[(b,)](q, k, v, scale_t, out, lse, dout, dq, dk, dv, h, m, kdim, vdim,
                         **_dot_blocks(h, m, kdim, vdim, q.device, block_m, backward=True))
        return dq, dk, dv
    bb, bh, bm, bk, bv = _bwd_blocks(b, h, m, kdim, vdim, q.dtype, q.device, block_m)
    skb, skh = _strides(k, h)
    _k_bwd[(triton.cdiv(b, bb),)](q, k, v, scale_t, out, lse, dout, dq, dk, dv,
                                  b, h, m, kdim, vdim, skb, skh,
                                  BLOCK_B=bb, BLOCK_H=bh, BLOCK_M=bm, BLOCK_K=bk, BLOCK_V=bv,
                                  SHARED_K=k.dim() == 3)
    return dq, dk, dv
