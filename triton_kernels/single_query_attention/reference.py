"""Pure-torch ground truth for single-query softmax attention with H heads (any dtype)."""

from __future__ import annotations

import torch

__all__ = [
    "single_query_attention_backward_reference",
    "single_query_attention_reference",
    "single_query_attention_with_lse_reference",
]


def _scores(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    """scale · q_bh · k_bm, [B, H, M], for keys shared by the heads ([B, M, K]) or per head."""
    return torch.einsum("bhk,bmk->bhm" if k.dim() == 3 else "bhk,bhmk->bhm", q, k) * scale


def single_query_attention_with_lse_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                              scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The output [B, H, V] and the scores' log-sum-exp [B, H] (what the kernel's backward reads).

    Args: as :func:`single_query_attention_reference`.
    """
    s = _scores(q, k, scale)
    lse = torch.logsumexp(s, dim=-1)
    return torch.einsum("bhm,bmv->bhv", torch.exp(s - lse[..., None]), v), lse


def single_query_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                     scale: float) -> torch.Tensor:
    """out[b, h] = Σ_m softmax_m(scale · q_bh · k_bm) v_bm.

    Args:
        q: [B, H, K] one query per head.
        k: [B, M, K] keys shared by the heads, or [B, H, M, K] per-head keys.
        v: [B, M, V] values shared by the heads.
        scale: multiplies the scores.

    Returns:
        [B, H, V].
    """
    return single_query_attention_with_lse_reference(q, k, v, scale)[0]


def single_query_attention_backward_reference(
        dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
        out: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) of Σ dout ⊙ out, dout [B, H, V], given the forward's out and lse: with
    p = exp(s − lse), dv_bm = Σ_h p_bhm dout_bh, ds = scale · p ⊙ (dout·v_m − dout·out), and
    dq, dk through s = scale · q·k (dk summed over heads when the keys are shared)."""
    shared = k.dim() == 3
    p = torch.exp(_scores(q, k, scale) - lse[..., None])
    dv = torch.einsum("bhm,bhv->bmv", p, dout)
    dp = torch.einsum("bhv,bmv->bhm", dout, v)
    ds = p * (dp - (dout * out).sum(-1, keepdim=True)) * scale
    dq = torch.einsum("bhm,bmk->bhk" if shared else "bhm,bhmk->bhk", ds, k)
    dk = torch.einsum("bhm,bhk->bmk", ds, q) if shared else ds[..., None] * q[:, :, None, :]
    return dq, dk, dv
