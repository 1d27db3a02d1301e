"""Chunked causal linear attention on tensor cores (the chunkwise-parallel form).

Tokens are cut into chunks of BT. Per (sequence, head), a serial pass over the chunks stores the
state before each chunk, h_c = Σ_{m < start of c} k_m v_mᵀ [K, V]; every chunk then reads its
output in parallel: o_c = scale (q_c h_c + (q_c k_cᵀ ⊙ M) v_c), M the causal mask inside the
chunk. The backward mirrors it: a reverse pass stores dh_c = Σ_{t after c} q_t do_tᵀ, then per
chunk dq = scale (do h_cᵀ + dA k), dk = scale (v dh_cᵀ + dAᵀ q), dv = scale (k dh_c + Aᵀ do),
with A = (q kᵀ) ⊙ M and dA = (do vᵀ) ⊙ M. Every product is a ``tl.dot`` accumulated in float32.

Inputs float32, bfloat16 or float16 (q, k, v, do of one dtype; outputs and gradients in it). The
states stay float32; they, A and dA are rounded to the input dtype only where they become a dot
operand beside a half-precision input (as flash-linear-attention does): that is where the half
precision's error enters. ``DOT`` is the operands' dtype (:func:`dot_inputs`): the input dtype
compiled, float32 under the interpreter, which has no half ``tl.dot`` (the rounding to the input
dtype happens before that exact upcast, so the interpreter computes the same products).

Layout [B, T, H, K] (flash-linear-attention's); any strides but a unit last one, so keys and
values broadcast over heads (stride 0) are read, not copied.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._launch import TritonKernel, block_size, compiled_for_gpu, dot_inputs

__all__ = ["causal_linear_attention_backward", "causal_linear_attention_forward", "state_shape"]


def _states_fwd(k_ptr, v_ptr, h_ptr, T, H, K, V, NT,
                skb, skt, skh, svb, svt, svh,
                BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, PRECISION: tl.constexpr,
                DOT: tl.constexpr):
    ik, iv, ibh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = (ibh // H).to(tl.int64), ibh % H
    ok = ik * BK + tl.arange(0, BK)
    ov = iv * BV + tl.arange(0, BV)
    mk, mv = ok < K, ov < V
    state = tl.zeros([BK, BV], dtype=tl.float32)
    for c in range(NT):
        ot = c * BT + tl.arange(0, BT)
        mt = ot < T
        tl.store(h_ptr + (((b * NT + c) * H + hh) * K + ok[:, None]) * V + ov[None, :], state,
                 mask=mk[:, None] & mv[None, :])
        kc = tl.load(k_ptr + b * skb + hh * skh + ot[:, None] * skt + ok[None, :],
                     mask=mt[:, None] & mk[None, :], other=0.0)  # [BT, BK]
        vc = tl.load(v_ptr + b * svb + hh * svh + ot[:, None] * svt + ov[None, :],
                     mask=mt[:, None] & mv[None, :], other=0.0)  # [BT, BV]
        state += tl.dot(tl.trans(kc).to(DOT), vc.to(DOT), input_precision=PRECISION)


def _out_fwd(q_ptr, k_ptr, v_ptr, h_ptr, o_ptr, scale, T, H, K, V, NT,
             sqb, sqt, sqh, skb, skt, skh, svb, svt, svh,
             STRICT: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
             PRECISION: tl.constexpr, DOT: tl.constexpr):
    iv, c, ibh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = (ibh // H).to(tl.int64), ibh % H
    io = q_ptr.dtype.element_ty  # the inputs' dtype: A, dA and the states meet them in it
    ot = c * BT + tl.arange(0, BT)
    ov = iv * BV + tl.arange(0, BV)
    mt, mv = ot < T, ov < V
    acc = tl.zeros([BT, BV], dtype=tl.float32)
    scores = tl.zeros([BT, BT], dtype=tl.float32)
    for k0 in range(0, K, BK):
        ok = k0 + tl.arange(0, BK)
        mk = ok < K
        qc = tl.load(q_ptr + b * sqb + hh * sqh + ot[:, None] * sqt + ok[None, :],
                     mask=mt[:, None] & mk[None, :], other=0.0)  # [BT, BK]
        kc = tl.load(k_ptr + b * skb + hh * skh + ot[:, None] * skt + ok[None, :],
                     mask=mt[:, None] & mk[None, :], other=0.0)  # [BT, BK]
        hc = tl.load(h_ptr + (((b * NT + c) * H + hh) * K + ok[:, None]) * V + ov[None, :],
                     mask=mk[:, None] & mv[None, :], other=0.0)  # [BK, BV]
        acc += tl.dot(qc.to(DOT), hc.to(io).to(DOT), input_precision=PRECISION)
        scores += tl.dot(qc.to(DOT), tl.trans(kc).to(DOT), input_precision=PRECISION)
    if STRICT:
        keep = ot[:, None] > ot[None, :]
    else:
        keep = ot[:, None] >= ot[None, :]
    scores = tl.where(keep, scores, 0.0).to(io).to(DOT)
    vc = tl.load(v_ptr + b * svb + hh * svh + ot[:, None] * svt + ov[None, :],
                 mask=mt[:, None] & mv[None, :], other=0.0)  # [BT, BV]
    acc += tl.dot(scores, vc.to(DOT), input_precision=PRECISION)
    tl.store(o_ptr + ((b * T + ot[:, None]) * H + hh) * V + ov[None, :], acc * scale,
             mask=mt[:, None] & mv[None, :])


def _states_bwd(q_ptr, do_ptr, dh_ptr, T, H, K, V, NT,
                sqb, sqt, sqh,
                BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, PRECISION: tl.constexpr,
                DOT: tl.constexpr):
    ik, iv, ibh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = (ibh // H).to(tl.int64), ibh % H
    ok = ik * BK + tl.arange(0, BK)
    ov = iv * BV + tl.arange(0, BV)
    mk, mv = ok < K, ov < V
    state = tl.zeros([BK, BV], dtype=tl.float32)
    for i in range(NT):
        c = NT - 1 - i
        ot = c * BT + tl.arange(0, BT)
        mt = ot < T
        tl.store(dh_ptr + (((b * NT + c) * H + hh) * K + ok[:, None]) * V + ov[None, :], state,
                 mask=mk[:, None] & mv[None, :])
        qc = tl.load(q_ptr + b * sqb + hh * sqh + ot[:, None] * sqt + ok[None, :],
                     mask=mt[:, None] & mk[None, :], other=0.0)  # [BT, BK]
        doc = tl.load(do_ptr + ((b * T + ot[:, None]) * H + hh) * V + ov[None, :],
                      mask=mt[:, None] & mv[None, :], other=0.0)  # [BT, BV]
        state += tl.dot(tl.trans(qc).to(DOT), doc.to(DOT), input_precision=PRECISION)


def _dqk_bwd(q_ptr, k_ptr, v_ptr, h_ptr, do_ptr, dh_ptr, dq_ptr, dk_ptr, scale, T, H, K, V, NT,
             sqb, sqt, sqh, skb, skt, skh, svb, svt, svh,
             STRICT: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
             PRECISION: tl.constexpr, DOT: tl.constexpr):
    ik, c, ibh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = (ibh // H).to(tl.int64), ibh % H
    io = q_ptr.dtype.element_ty  # the inputs' dtype: A, dA and the states meet them in it
    ot = c * BT + tl.arange(0, BT)
    ok = ik * BK + tl.arange(0, BK)
    mt, mk = ot < T, ok < K
    dq = tl.zeros([BT, BK], dtype=tl.float32)
    dk = tl.zeros([BT, BK], dtype=tl.float32)
    dscores = tl.zeros([BT, BT], dtype=tl.float32)
    for v0 in range(0, V, BV):
        ov = v0 + tl.arange(0, BV)
        mv = ov < V
        vc = tl.load(v_ptr + b * svb + hh * svh + ot[:, None] * svt + ov[None, :],
                     mask=mt[:, None] & mv[None, :], other=0.0)  # [BT, BV]
        doc = tl.load(do_ptr + ((b * T + ot[:, None]) * H + hh) * V + ov[None, :],
                      mask=mt[:, None] & mv[None, :], other=0.0)  # [BT, BV]
        state = (((b * NT + c) * H + hh) * K + ok[:, None]) * V + ov[None, :]
        m2 = mk[:, None] & mv[None, :]
        hc = tl.load(h_ptr + state, mask=m2, other=0.0)    # [BK, BV]
        dhc = tl.load(dh_ptr + state, mask=m2, other=0.0)  # [BK, BV]
        dq += tl.dot(doc.to(DOT), tl.trans(hc).to(io).to(DOT), input_precision=PRECISION)
        dk += tl.dot(vc.to(DOT), tl.trans(dhc).to(io).to(DOT), input_precision=PRECISION)
        dscores += tl.dot(doc.to(DOT), tl.trans(vc).to(DOT), input_precision=PRECISION)
    if STRICT:
        keep = ot[:, None] > ot[None, :]
    else:
        keep = ot[:, None] >= ot[None, :]
    dscores = tl.where(keep, dscores, 0.0).to(io).to(DOT)  # [t, m]
    qc = tl.load(q_ptr + b * sqb + hh * sqh + ot[:, None] * sqt + ok[None, :],
                 mask=mt[:, None] & mk[None, :], other=0.0)  # [BT, BK]
    kc = tl.load(k_ptr + b * skb + hh * skh + ot[:, None] * skt + ok[None, :],
                 mask=mt[:, None] & mk[None, :], other=0.0)  # [BT, BK]
    dq += tl.dot(dscores, kc.to(DOT), input_precision=PRECISION)
    dk += tl.dot(tl.trans(dscores), qc.to(DOT), input_precision=PRECISION)
    out = ((b * T + ot[:, None]) * H + hh) * K + ok[None, :]
    tl.store(dq_ptr + out, dq * scale, mask=mt[:, None] & mk[None, :])
    tl.store(dk_ptr + out, dk * scale, mask=mt[:, None] & mk[None, :])


def _dv_bwd(q_ptr, k_ptr, do_ptr, dh_ptr, dv_ptr, scale, T, H, K, V, NT,
            sqb, sqt, sqh, skb, skt, skh,
            STRICT: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
            PRECISION: tl.constexpr, DOT: tl.constexpr):
    iv, c, ibh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = (ibh // H).to(tl.int64), ibh % H
    io = q_ptr.dtype.element_ty  # the inputs' dtype: A, dA and the states meet them in it
    ot = c * BT + tl.arange(0, BT)
    ov = iv * BV + tl.arange(0, BV)
    mt, mv = ot < T, ov < V
    dv = tl.zeros([BT, BV], dtype=tl.float32)
    scores_t = tl.zeros([BT, BT], dtype=tl.float32)  # [m, t] = k_m · q_t
    for k0 in range(0, K, BK):
        ok = k0 + tl.arange(0, BK)
        mk = ok < K
        kc = tl.load(k_ptr + b * skb + hh * skh + ot[:, None] * skt + ok[None, :],
                     mask=mt[:, None] & mk[None, :], other=0.0)  # [BT, BK]
        qc = tl.load(q_ptr + b * sqb + hh * sqh + ot[:, None] * sqt + ok[None, :],
                     mask=mt[:, None] & mk[None, :], other=0.0)  # [BT, BK]
        dhc = tl.load(dh_ptr + (((b * NT + c) * H + hh) * K + ok[:, None]) * V + ov[None, :],
                      mask=mk[:, None] & mv[None, :], other=0.0)  # [BK, BV]
        dv += tl.dot(kc.to(DOT), dhc.to(io).to(DOT), input_precision=PRECISION)
        scores_t += tl.dot(kc.to(DOT), tl.trans(qc).to(DOT), input_precision=PRECISION)
    if STRICT:
        keep = ot[None, :] > ot[:, None]
    else:
        keep = ot[None, :] >= ot[:, None]
    scores_t = tl.where(keep, scores_t, 0.0).to(io).to(DOT)
    doc = tl.load(do_ptr + ((b * T + ot[:, None]) * H + hh) * V + ov[None, :],
                  mask=mt[:, None] & mv[None, :], other=0.0)  # [BT, BV]
    dv += tl.dot(scores_t, doc.to(DOT), input_precision=PRECISION)
    tl.store(dv_ptr + ((b * T + ot[:, None]) * H + hh) * V + ov[None, :], dv * scale,
             mask=mt[:, None] & mv[None, :])


_k_states_fwd = TritonKernel(_states_fwd)
_k_out_fwd = TritonKernel(_out_fwd)
_k_states_bwd = TritonKernel(_states_bwd)
_k_dqk_bwd = TritonKernel(_dqk_bwd)
_k_dv_bwd = TritonKernel(_dv_bwd)



def _blocks(t: int, kd: int, vd: int, device) -> dict:
    """Launch constexprs: chunks of BT = 32 tokens compiled (16 under the interpreter, where every
    program is a Python iteration over tiles), feature tiles BK, BV of 16 or 32 (``tl.dot``'s
    smallest operand is 16), 4 warps, 2 pipeline stages: the largest tiles with no spill (no
    stack frame) for sm_80 and sm_90 in the AOT report; 64-token chunks or 64-wide tiles spilled
    up to 12 KB a thread on sm_80 (README.md)."""
    big = 32 if compiled_for_gpu(device) else 16
    return {"BT": min(big, block_size(t, 16)), "BK": min(32, block_size(kd, 16)),
            "BV": min(32, block_size(vd, 16)), "num_warps": 4, "num_stages": 2}


def state_shape(b: int, t: int, h: int, kd: int, vd: int, device) -> tuple[int, ...]:
    """Shape of the forward's saved states: [B, NT, H, K, V], NT the number of chunks."""
    return (b, triton.cdiv(t, _blocks(t, kd, vd, device)["BT"]), h, kd, vd)


def _strides(t: torch.Tensor) -> tuple[int, int, int]:
    return t.stride(0), t.stride(1), t.stride(2)


def _unit_last(t: torch.Tensor) -> torch.Tensor:
    return t if t.stride(-1) == 1 else t.contiguous()


def causal_linear_attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                    scale: float, strict: bool
                                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """(o [B, T, H, V] in the inputs' dtype, states [B, NT, H, K, V] float32, the state before
    each chunk, which the backward reads) for q, k [B, T, H, K] and v [B, T, H, V] of one dtype:
    float32, bfloat16 or float16."""
    q, k, v = _unit_last(q), _unit_last(k), _unit_last(v)
    b, t, h, kd = q.shape
    vd = v.shape[-1]
    blocks = _blocks(t, kd, vd, q.device)
    bt, bk, bv = blocks["BT"], blocks["BK"], blocks["BV"]
    nt = triton.cdiv(t, bt)
    dot = dot_inputs(q.dtype, q.device)
    states = torch.empty(state_shape(b, t, h, kd, vd, q.device), dtype=torch.float32,
                         device=q.device)
    o = torch.empty(b, t, h, vd, dtype=q.dtype, device=q.device)
    _k_states_fwd[(triton.cdiv(kd, bk), triton.cdiv(vd, bv), b * h)](
        k, v, states, t, h, kd, vd, nt, *_strides(k), *_strides(v),
        **dot, **blocks)
    _k_out_fwd[(triton.cdiv(vd, bv), nt, b * h)](
        q, k, v, states, o, scale, t, h, kd, vd, nt, *_strides(q), *_strides(k), *_strides(v),
        STRICT=strict, **dot, **blocks)
    return o, states


def causal_linear_attention_backward(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                                     v: torch.Tensor, states: torch.Tensor, scale: float,
                                     strict: bool
                                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk [B, T, H, K], dv [B, T, H, V], in the inputs' dtype) of Σ do ⊙ o, given the
    forward's states; ``do`` [B, T, H, V] in the inputs' dtype."""
    q, k, v, do = _unit_last(q), _unit_last(k), _unit_last(v), do.contiguous()
    b, t, h, kd = q.shape
    vd = v.shape[-1]
    blocks = _blocks(t, kd, vd, q.device)
    bt, bk, bv = blocks["BT"], blocks["BK"], blocks["BV"]
    nt = triton.cdiv(t, bt)
    dot = dot_inputs(q.dtype, q.device)
    dstates = torch.empty_like(states)
    dq = torch.empty(b, t, h, kd, dtype=q.dtype, device=q.device)
    dk = torch.empty_like(dq)
    dv = torch.empty(b, t, h, vd, dtype=q.dtype, device=q.device)
    _k_states_bwd[(triton.cdiv(kd, bk), triton.cdiv(vd, bv), b * h)](
        q, do, dstates, t, h, kd, vd, nt, *_strides(q), **dot, **blocks)
    _k_dqk_bwd[(triton.cdiv(kd, bk), nt, b * h)](
        q, k, v, states, do, dstates, dq, dk, scale, t, h, kd, vd, nt,
        *_strides(q), *_strides(k), *_strides(v),
        STRICT=strict, **dot, **blocks)
    _k_dv_bwd[(triton.cdiv(vd, bv), nt, b * h)](
        q, k, do, dstates, dv, scale, t, h, kd, vd, nt, *_strides(q), *_strides(k),
        STRICT=strict, **dot, **blocks)
    return dq, dk, dv
