"""Pure-torch ground truth for single-query softmax attention with H heads (any dtype)."""

from __future__ import annotations

import torch

__all__ = ["single_query_attention_reference"]


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
    if k.dim() == 3:
        s = torch.einsum("bhk,bmk->bhm", q, k)
    else:
        s = torch.einsum("bhk,bhmk->bhm", q, k)
    p = torch.softmax(s * scale, dim=-1)
    return torch.einsum("bhm,bmv->bhv", p, v)
