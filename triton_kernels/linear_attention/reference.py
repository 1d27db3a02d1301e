"""Pure-torch ground truth for causal linear attention (any floating dtype, float64 included): the
quadratic form, and the recurrent form written the other way (a running state), for tests to
cross-check."""

from __future__ import annotations

import torch

__all__ = ["causal_linear_attention_recurrent", "causal_linear_attention_reference"]


def causal_linear_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                      scale: float = 1.0, strict: bool = False) -> torch.Tensor:
    """o_t = scale Σ_{m ≤ t} (q_t · k_m) v_m (``strict``: m < t), per sequence and head, as the
    masked [T, T] score matrix (O(T² (K + V))).

    Args:
        q: [B, T, H, K] queries.
        k: [B, T, H, K] keys.
        v: [B, T, H, V] values.
        scale: multiplies every score (flash-linear-attention's default is K^-1/2; ours is 1).
        strict: exclude the diagonal (token t does not read itself: next-token prediction).

    Returns:
        [B, T, H, V] in q's dtype; bfloat16 and float16 inputs are computed in float32 (the
        scores of half-precision inputs would otherwise be rounded to it).
    """
    t = q.shape[1]
    wide = torch.promote_types(q.dtype, torch.float32)
    scores = torch.einsum("bthk,bshk->bhts", q.to(wide), k.to(wide)) * scale
    keep = torch.ones(t, t, dtype=torch.bool, device=q.device).tril(-1 if strict else 0)
    return torch.einsum("bhts,bshv->bthv", scores * keep, v.to(wide)).to(q.dtype)


def causal_linear_attention_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                      scale: float = 1.0, strict: bool = False) -> torch.Tensor:
    """The same outputs from the running state S_t = Σ_{m ≤ t} k_m v_mᵀ [K, V], one token at a
    time (O(T K V); shapes as :func:`causal_linear_attention_reference`)."""
    b, t, h, _ = q.shape
    state = q.new_zeros(b, h, q.shape[-1], v.shape[-1])
    out = []
    for i in range(t):
        update = torch.einsum("bhk,bhv->bhkv", k[:, i], v[:, i])
        if not strict:
            state = state + update
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, i], state) * scale)
        if strict:
            state = state + update
    return torch.stack(out, 1)
