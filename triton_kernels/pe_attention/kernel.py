"""Triton kernels for causal linear attention with a multiplicative positional matrix:
O[b, h, i] = Σ_{j ≤ i + LOOKAHEAD} P[h, i, j] (q_bhi · k_bhj) v_bhj, and its backward.

FlashAttention-style tiles without a softmax (no running max or normaliser): a program holds a
[BLOCK_Q, BLOCK_K] score tile S = q kᵀ, weights it by the P tile and the mask, and accumulates
S V. No ``tl.dot`` (K and V may be below 16 and float64 must run under the interpreter):
contractions are sums of broadcasts over [BLOCK_Q, BLOCK_K, BLOCK_D] tiles, always reduced over
the last axis: Triton rewrites ``tl.sum(a[:, :, None] * b[None, :, :], axis=1)`` into a
``tt.dot``, which Triton 3.6 made TF32 on sm_80+ (relative error ~1e-3 in float32; the AOT
report flags such implicit dots). The backward runs two
kernels so that nothing is accumulated by atomics: one per (head, query block, batch slice) gives
dq and this slice's partial dP (summed over the slice's sequences in a fixed order), one per
(sequence, head, key block) gives dk and dv; torch sums the dP partials in a fixed order.

The ``_pe_dot_*`` kernels (float32) do the same with batched ``tl.dot`` on tiles padded to 16,
BLOCK_B sequences of one head per program sharing each P tile; the broadcast kernels above stay
for float64 and as their check (README).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._launch import (
    TritonKernel,
    block_size,
    compiled_for_gpu,
    dot_precision,
    register_budget,
    sm_count,
)

__all__ = ["pe_attention_backward", "pe_attention_forward"]


def _blocks(tq: int, tk: int, k: int, v: int, dtype: torch.dtype) -> tuple[int, int, int, int]:
    """(BLOCK_Q, BLOCK_K, BLOCK_D, BLOCK_V): the [BLOCK_Q, BLOCK_K, max(BLOCK_D, BLOCK_V)]
    broadcast within 4096 float32 (1024 float64) elements (README.md: registers and occupancy)."""
    bd, bv = block_size(k), block_size(v)
    bq, bk = min(block_size(tq), 32), min(block_size(tk), 32)
    # float64: a quarter (not half) of float32's elements keeps the dq/dP kernel at 25 %
    budget = register_budget(dtype, 1 << 12) // (2 if dtype.itemsize > 4 else 1)
    while bq * bk * max(bd, bv) > budget and max(bq, bk) > 1:
        if bq >= bk:
            bq //= 2
        else:
            bk //= 2
    return bq, bk, bd, bv


def _pe_attention_fwd(q_ptr, k_ptr, v_ptr, p_ptr, o_ptr, H, TQ, TK, K, V,
                      LOOKAHEAD: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
                      BLOCK_D: tl.constexpr, BLOCK_V: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    qb = tl.program_id(1)
    h = bh % H
    oi = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    od = tl.arange(0, BLOCK_D)
    ov = tl.arange(0, BLOCK_V)
    mi = oi < TQ
    q = tl.load(q_ptr + bh * TQ * K + oi[:, None] * K + od[None, :],
                mask=mi[:, None] & (od[None, :] < K), other=0.0)              # [BQ, BD]
    acc = tl.zeros([BLOCK_Q, BLOCK_V], dtype=q.dtype)
    last = tl.minimum(TK, qb * BLOCK_Q + BLOCK_Q + LOOKAHEAD)             # keys past it are masked
    for kb in range(0, tl.cdiv(last, BLOCK_K)):
        oj = kb * BLOCK_K + tl.arange(0, BLOCK_K)
        mj = oj < TK
        k = tl.load(k_ptr + bh * TK * K + oj[:, None] * K + od[None, :],
                    mask=mj[:, None] & (od[None, :] < K), other=0.0)          # [BK, BD]
        v = tl.load(v_ptr + bh * TK * V + oj[:, None] * V + ov[None, :],
                    mask=mj[:, None] & (ov[None, :] < V), other=0.0)          # [BK, BV]
        m = mi[:, None] & mj[None, :] & (oj[None, :] <= oi[:, None] + LOOKAHEAD)
        p = tl.load(p_ptr + h * TQ * TK + oi[:, None] * TK + oj[None, :], mask=m, other=0.0)
        w = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * p               # [BQ, BK]
        acc += tl.sum(w[:, None, :] * tl.trans(v)[None, :, :], axis=2)  # not axis 1: module doc
    tl.store(o_ptr + bh * TQ * V + oi[:, None] * V + ov[None, :], acc,
             mask=mi[:, None] & (ov[None, :] < V))


def _pe_attention_bwd_dq_dp(q_ptr, k_ptr, v_ptr, p_ptr, do_ptr, dq_ptr, dp_ptr, B, H, TQ, TK, K, V,
                            NB, LOOKAHEAD: tl.constexpr, BLOCK_Q: tl.constexpr,
                            BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_V: tl.constexpr):
    h = tl.program_id(0).to(tl.int64)
    qb = tl.program_id(1)
    slice_ = tl.program_id(2)
    oi = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    od = tl.arange(0, BLOCK_D)
    ov = tl.arange(0, BLOCK_V)
    mi = oi < TQ
    mq = mi[:, None] & (od[None, :] < K)
    part = dp_ptr + (slice_.to(tl.int64) * H + h) * TQ * TK   # this slice's partial dP, zeroed
    last = tl.minimum(TK, qb * BLOCK_Q + BLOCK_Q + LOOKAHEAD)
    for b in range(slice_, B, NB):                            # fixed order: deterministic dP
        bh = h + b * H                                        # int64: h is
        q = tl.load(q_ptr + bh * TQ * K + oi[:, None] * K + od[None, :], mask=mq, other=0.0)
        do = tl.load(do_ptr + bh * TQ * V + oi[:, None] * V + ov[None, :],
                     mask=mi[:, None] & (ov[None, :] < V), other=0.0)       # [BQ, BV]
        dq = tl.zeros([BLOCK_Q, BLOCK_D], dtype=q.dtype)
        for kb in range(0, tl.cdiv(last, BLOCK_K)):
            oj = kb * BLOCK_K + tl.arange(0, BLOCK_K)
            mj = oj < TK
            k = tl.load(k_ptr + bh * TK * K + oj[:, None] * K + od[None, :],
                        mask=mj[:, None] & (od[None, :] < K), other=0.0)
            v = tl.load(v_ptr + bh * TK * V + oj[:, None] * V + ov[None, :],
                        mask=mj[:, None] & (ov[None, :] < V), other=0.0)
            m = mi[:, None] & mj[None, :] & (oj[None, :] <= oi[:, None] + LOOKAHEAD)
            p = tl.load(p_ptr + h * TQ * TK + oi[:, None] * TK + oj[None, :], mask=m, other=0.0)
            s = tl.sum(q[:, None, :] * k[None, :, :], axis=2)                # [BQ, BK]
            g = tl.sum(do[:, None, :] * v[None, :, :], axis=2)               # dO vᵀ
            dq += tl.sum((g * p)[:, None, :] * tl.trans(k)[None, :, :], axis=2)
            # only this program touches this tile of its partial (no atomics)
            tile = part + oi[:, None] * TK + oj[None, :]
            tl.store(tile, tl.load(tile, mask=m, other=0.0) + g * s, mask=m)
        tl.store(dq_ptr + bh * TQ * K + oi[:, None] * K + od[None, :], dq, mask=mq)


def _pe_attention_bwd_dk_dv(q_ptr, k_ptr, v_ptr, p_ptr, do_ptr, dk_ptr, dv_ptr, H, TQ, TK, K, V,
                            LOOKAHEAD: tl.constexpr, BLOCK_Q: tl.constexpr,
                            BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_V: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    kb = tl.program_id(1)
    h = bh % H
    oj = kb * BLOCK_K + tl.arange(0, BLOCK_K)
    od = tl.arange(0, BLOCK_D)
    ov = tl.arange(0, BLOCK_V)
    mj = oj < TK
    mk = mj[:, None] & (od[None, :] < K)
    mv = mj[:, None] & (ov[None, :] < V)
    k = tl.load(k_ptr + bh * TK * K + oj[:, None] * K + od[None, :], mask=mk, other=0.0)
    v = tl.load(v_ptr + bh * TK * V + oj[:, None] * V + ov[None, :], mask=mv, other=0.0)
    dk = tl.zeros([BLOCK_K, BLOCK_D], dtype=k.dtype)
    dv = tl.zeros([BLOCK_K, BLOCK_V], dtype=k.dtype)
    first = tl.maximum(kb * BLOCK_K - LOOKAHEAD, 0) // BLOCK_Q            # earlier queries are masked
    for qb in range(first, tl.cdiv(TQ, BLOCK_Q)):
        oi = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
        mi = oi < TQ
        q = tl.load(q_ptr + bh * TQ * K + oi[:, None] * K + od[None, :],
                    mask=mi[:, None] & (od[None, :] < K), other=0.0)          # [BQ, BD]
        do = tl.load(do_ptr + bh * TQ * V + oi[:, None] * V + ov[None, :],
                     mask=mi[:, None] & (ov[None, :] < V), other=0.0)       # [BQ, BV]
        m = mi[:, None] & mj[None, :] & (oj[None, :] <= oi[:, None] + LOOKAHEAD)
        p = tl.load(p_ptr + h * TQ * TK + oi[:, None] * TK + oj[None, :], mask=m, other=0.0)
        w = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * p               # [BQ, BK]
        ds = tl.sum(do[:, None, :] * v[None, :, :], axis=2) * p
        dv += tl.sum(w[:, :, None] * do[:, None, :], axis=0)
        dk += tl.sum(ds[:, :, None] * q[:, None, :], axis=0)
    tl.store(dk_ptr + bh * TK * K + oj[:, None] * K + od[None, :], dk, mask=mk)
    tl.store(dv_ptr + bh * TK * V + oj[:, None] * V + ov[None, :], dv, mask=mv)


def _pe_dot_fwd(q_ptr, k_ptr, v_ptr, p_ptr, o_ptr, B, H, TQ, TK, K, V,
                LOOKAHEAD: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_Q: tl.constexpr,
                BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_V: tl.constexpr,
                PRECISION: tl.constexpr):
    h = tl.program_id(0) % H
    ob = (tl.program_id(0) // H * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    qb = tl.program_id(1)
    bh = (ob * H + h)[:, None, None]                                   # [BB, 1, 1]
    mb = (ob < B)[:, None, None]
    oi = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    od = tl.arange(0, BLOCK_D)[None, None, :]
    ov = tl.arange(0, BLOCK_V)[None, None, :]
    mi = oi < TQ
    q = tl.load(q_ptr + bh * TQ * K + oi[None, :, None] * K + od,
                mask=mb & mi[None, :, None] & (od < K), other=0.0)          # [BB, BQ, BD]
    acc = tl.zeros([BLOCK_B, BLOCK_Q, BLOCK_V], dtype=tl.float32)
    last = tl.minimum(TK, qb * BLOCK_Q + BLOCK_Q + LOOKAHEAD)             # keys past it are masked
    for kb in range(0, tl.cdiv(last, BLOCK_K)):
        oj = kb * BLOCK_K + tl.arange(0, BLOCK_K)
        mj = oj < TK
        k = tl.load(k_ptr + bh * TK * K + oj[None, :, None] * K + od,
                    mask=mb & mj[None, :, None] & (od < K), other=0.0)      # [BB, BK, BD]
        v = tl.load(v_ptr + bh * TK * V + oj[None, :, None] * V + ov,
                    mask=mb & mj[None, :, None] & (ov < V), other=0.0)      # [BB, BK, BV]
        m = mi[:, None] & mj[None, :] & (oj[None, :] <= oi[:, None] + LOOKAHEAD)
        # one P tile for the block's BLOCK_B sequences
        p = tl.load(p_ptr + h * TQ * TK + oi[:, None] * TK + oj[None, :], mask=m, other=0.0)
        s = tl.dot(q, tl.permute(k, (0, 2, 1)), input_precision=PRECISION)  # [BB, BQ, BK]
        acc += tl.dot(s * p[None, :, :], v, input_precision=PRECISION)
    tl.store(o_ptr + bh * TQ * V + oi[None, :, None] * V + ov, acc,
             mask=mb & mi[None, :, None] & (ov < V))


def _pe_dot_bwd_dq_dp(q_ptr, k_ptr, v_ptr, p_ptr, do_ptr, dq_ptr, dp_ptr, B, H, TQ, TK, K, V,
                      NB, LOOKAHEAD: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_Q: tl.constexpr,
                      BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_V: tl.constexpr,
                      PRECISION: tl.constexpr):
    h = tl.program_id(0).to(tl.int64)
    qb = tl.program_id(1)
    slice_ = tl.program_id(2)
    oi = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    od = tl.arange(0, BLOCK_D)[None, None, :]
    ov = tl.arange(0, BLOCK_V)[None, None, :]
    mi = oi < TQ
    part = dp_ptr + (slice_.to(tl.int64) * H + h) * TQ * TK   # this slice's partial dP, zeroed
    last = tl.minimum(TK, qb * BLOCK_Q + BLOCK_Q + LOOKAHEAD)
    for b0 in range(slice_ * BLOCK_B, B, NB * BLOCK_B):       # fixed order: deterministic dP
        ob = b0 + tl.arange(0, BLOCK_B).to(tl.int64)
        bh = (ob * H + h)[:, None, None]
        mb = (ob < B)[:, None, None]
        mq = mb & mi[None, :, None] & (od < K)
        q = tl.load(q_ptr + bh * TQ * K + oi[None, :, None] * K + od, mask=mq, other=0.0)
        do = tl.load(do_ptr + bh * TQ * V + oi[None, :, None] * V + ov,
                     mask=mb & mi[None, :, None] & (ov < V), other=0.0)     # [BB, BQ, BV]
        dq = tl.zeros([BLOCK_B, BLOCK_Q, BLOCK_D], dtype=tl.float32)
        for kb in range(0, tl.cdiv(last, BLOCK_K)):
            oj = kb * BLOCK_K + tl.arange(0, BLOCK_K)
            mj = oj < TK
            k = tl.load(k_ptr + bh * TK * K + oj[None, :, None] * K + od,
                        mask=mb & mj[None, :, None] & (od < K), other=0.0)  # [BB, BK, BD]
            v = tl.load(v_ptr + bh * TK * V + oj[None, :, None] * V + ov,
                        mask=mb & mj[None, :, None] & (ov < V), other=0.0)  # [BB, BK, BV]
            m = mi[:, None] & mj[None, :] & (oj[None, :] <= oi[:, None] + LOOKAHEAD)
            p = tl.load(p_ptr + h * TQ * TK + oi[:, None] * TK + oj[None, :], mask=m, other=0.0)
            s = tl.dot(q, tl.permute(k, (0, 2, 1)), input_precision=PRECISION)    # [BB, BQ, BK]
            g = tl.dot(do, tl.permute(v, (0, 2, 1)), input_precision=PRECISION)   # dO vᵀ
            dq += tl.dot(g * p[None, :, :], k, input_precision=PRECISION)
            # only this program touches this tile of its partial (no atomics)
            tile = part + oi[:, None] * TK + oj[None, :]
            tl.store(tile, tl.load(tile, mask=m, other=0.0) + tl.sum(g * s, axis=0), mask=m)
        tl.store(dq_ptr + bh * TQ * K + oi[None, :, None] * K + od, dq, mask=mq)


def _pe_dot_bwd_dk_dv(q_ptr, k_ptr, v_ptr, p_ptr, do_ptr, dk_ptr, dv_ptr, B, H, TQ, TK, K, V,
                      LOOKAHEAD: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_Q: tl.constexpr,
                      BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_V: tl.constexpr,
                      PRECISION: tl.constexpr):
    h = tl.program_id(0) % H
    ob = (tl.program_id(0) // H * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    kb = tl.program_id(1)
    bh = (ob * H + h)[:, None, None]
    mb = (ob < B)[:, None, None]
    oj = kb * BLOCK_K + tl.arange(0, BLOCK_K)
    od = tl.arange(0, BLOCK_D)[None, None, :]
    ov = tl.arange(0, BLOCK_V)[None, None, :]
    mj = oj < TK
    mk = mb & mj[None, :, None] & (od < K)
    mv = mb & mj[None, :, None] & (ov < V)
    k = tl.load(k_ptr + bh * TK * K + oj[None, :, None] * K + od, mask=mk, other=0.0)
    v = tl.load(v_ptr + bh * TK * V + oj[None, :, None] * V + ov, mask=mv, other=0.0)
    dk = tl.zeros([BLOCK_B, BLOCK_K, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_B, BLOCK_K, BLOCK_V], dtype=tl.float32)
    first = tl.maximum(kb * BLOCK_K - LOOKAHEAD, 0) // BLOCK_Q            # earlier queries are masked
    for qb in range(first, tl.cdiv(TQ, BLOCK_Q)):
        oi = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
        mi = oi < TQ
        q = tl.load(q_ptr + bh * TQ * K + oi[None, :, None] * K + od,
                    mask=mb & mi[None, :, None] & (od < K), other=0.0)      # [BB, BQ, BD]
        do = tl.load(do_ptr + bh * TQ * V + oi[None, :, None] * V + ov,
                     mask=mb & mi[None, :, None] & (ov < V), other=0.0)     # [BB, BQ, BV]
        m = mi[:, None] & mj[None, :] & (oj[None, :] <= oi[:, None] + LOOKAHEAD)
        p = tl.load(p_ptr + h * TQ * TK + oi[:, None] * TK + oj[None, :], mask=m, other=0.0)
        w = tl.dot(q, tl.permute(k, (0, 2, 1)), input_precision=PRECISION) * p[None, :, :]
        ds = tl.dot(do, tl.permute(v, (0, 2, 1)), input_precision=PRECISION) * p[None, :, :]
        dv += tl.dot(tl.permute(w, (0, 2, 1)), do, input_precision=PRECISION)  # Wᵀ dO
        dk += tl.dot(tl.permute(ds, (0, 2, 1)), q, input_precision=PRECISION)
    tl.store(dk_ptr + bh * TK * K + oj[None, :, None] * K + od, dk, mask=mk)
    tl.store(dv_ptr + bh * TK * V + oj[None, :, None] * V + ov, dv, mask=mv)


_fwd = TritonKernel(_pe_attention_fwd)
_bwd_dq_dp = TritonKernel(_pe_attention_bwd_dq_dp)
_bwd_dk_dv = TritonKernel(_pe_attention_bwd_dk_dv)
_dot_fwd = TritonKernel(_pe_dot_fwd)
_dot_bwd_dq_dp = TritonKernel(_pe_dot_bwd_dq_dp)
_dot_bwd_dk_dv = TritonKernel(_pe_dot_bwd_dk_dv)


def _slices(b: int, programs: int, device: torch.device) -> int:
    """Slices of the ``b`` sequences (or sequence blocks) of the dq/dP kernels: enough programs to
    fill the device (4 per SM on CUDA, one slice under the interpreter, where each program is one
    more Python loop), at most ``b``."""
    if not compiled_for_gpu(device):
        return 1
    target = 4 * sm_count(device)
    return max(1, min(b, -(-target // max(programs, 1))))



def _use_tiled(dtype: torch.dtype, tiled: bool | None) -> bool:
    """Whether the launchers run the ``tl.dot`` kernels: by default at float32 (float64 has no
    ``tl.dot`` under the interpreter and keeps the broadcast kernels)."""
    if tiled and dtype != torch.float32:
        raise ValueError(f"tiled=True needs float32 inputs; got {str(dtype).removeprefix('torch.')}: "
                         "pass tiled=None")
    return dtype == torch.float32 if tiled is None else tiled


def _dot_blocks(b: int, tq: int, tk: int, k: int, v: int, device) -> dict[str, int | str]:
    """Constexprs of the tiled kernels: K and V padded to 16 (``tl.dot``'s smallest operand),
    (T, T) tiles of 16 x 16 compiled (32 x 32 under the interpreter), and BLOCK_B sequences per
    program sharing each P tile, [BLOCK_B, BLOCK_Q, BLOCK_K] within 1024 elements compiled, 8
    warps and 2 pipeline stages (README: the AOT report's registers and occupancy; on 4 warps
    the backward spilled at K = 64), 16384 under the interpreter (each program is one more
    Python iteration)."""
    compiled = compiled_for_gpu(device)
    tile = 16 if compiled else 32
    bq, bk = min(block_size(tq, 16), tile), min(block_size(tk, 16), tile)
    bb = max(1, min(block_size(b), ((1 << 10) if compiled else (1 << 14)) // (bq * bk)))
    return {"BLOCK_B": bb, "BLOCK_Q": bq, "BLOCK_K": bk, "BLOCK_D": block_size(k, 16),
            "BLOCK_V": block_size(v, 16), "PRECISION": dot_precision(torch.float32, device),
            "num_warps": 8, "num_stages": 2}


def pe_attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: torch.Tensor,
                         lookahead: int, tiled: bool | None = None) -> torch.Tensor:
    """O `[B, H, Tq, V]` from contiguous q `[B, H, Tq, K]`, k `[B, H, Tk, K]`, v `[B, H, Tk, V]`,
    p `[H, Tq, Tk]` of one dtype. ``tiled`` forces the ``tl.dot`` kernels (True, float32 only) or
    the broadcast ones (False) instead of the launcher's choice (None; tests compare the two)."""
    b, h, tq, kd = q.shape
    tk, vd = k.shape[2], v.shape[3]
    out = torch.empty(b, h, tq, vd, dtype=q.dtype, device=q.device)
    if _use_tiled(q.dtype, tiled):
        meta = _dot_blocks(b, tq, tk, kd, vd, q.device)
        _dot_fwd[(triton.cdiv(b, meta["BLOCK_B"]) * h, triton.cdiv(tq, meta["BLOCK_Q"]))](
            q, k, v, p, out, b, h, tq, tk, kd, vd, LOOKAHEAD=lookahead, **meta)
        return out
    bq, bk, bd, bv = _blocks(tq, tk, kd, vd, q.dtype)
    _fwd[(b * h, triton.cdiv(tq, bq))](q, k, v, p, out, h, tq, tk, kd, vd, LOOKAHEAD=lookahead,
                                        BLOCK_Q=bq, BLOCK_K=bk, BLOCK_D=bd, BLOCK_V=bv)
    return out


def pe_attention_backward(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                          p: torch.Tensor, lookahead: int, tiled: bool | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv, dp) of Σ dout ⊙ :func:`pe_attention_forward`; dp `[H, Tq, Tk]` is summed over
    the batch deterministically (per-slice partials, then a fixed-order sum); ``tiled`` as in the
    forward."""
    b, h, tq, kd = q.shape
    tk, vd = k.shape[2], v.shape[3]
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if _use_tiled(q.dtype, tiled):
        meta = dict(_dot_blocks(b, tq, tk, kd, vd, q.device), LOOKAHEAD=lookahead)
        nbb, nqb = triton.cdiv(b, meta["BLOCK_B"]), triton.cdiv(tq, meta["BLOCK_Q"])
        nb = _slices(nbb, h * nqb, q.device)
        part = torch.zeros(nb, h, tq, tk, dtype=q.dtype, device=q.device)
        _dot_bwd_dq_dp[(h, nqb, nb)](q, k, v, p, dout, dq, part, b, h, tq, tk, kd, vd, nb, **meta)
        _dot_bwd_dk_dv[(nbb * h, triton.cdiv(tk, meta["BLOCK_K"]))](
            q, k, v, p, dout, dk, dv, b, h, tq, tk, kd, vd, **meta)
        return dq, dk, dv, part.sum(0)
    bq, bk, bd, bv = _blocks(tq, tk, kd, vd, q.dtype)
    nqb = triton.cdiv(tq, bq)
    nb = _slices(b, h * nqb, q.device)
    part = torch.zeros(nb, h, tq, tk, dtype=q.dtype, device=q.device)
    meta = dict(LOOKAHEAD=lookahead, BLOCK_Q=bq, BLOCK_K=bk, BLOCK_D=bd, BLOCK_V=bv)
    _bwd_dq_dp[(h, nqb, nb)](q, k, v, p, dout, dq, part, b, h, tq, tk, kd, vd, nb, **meta)
    _bwd_dk_dv[(b * h, triton.cdiv(tk, bk))](q, k, v, p, dout, dk, dv, h, tq, tk, kd, vd, **meta)
    return dq, dk, dv, part.sum(0)
