"""Pure-torch ground truth for causal linear attention with a multiplicative positional matrix
(any dtype, float64 included): forward, and its backward written out (tested against autograd)."""

from __future__ import annotations

import torch

__all__ = ["causal_mask", "pe_attention_backward_reference", "pe_attention_reference"]


def causal_mask(tq: int, tk: int, lookahead: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """M `[Tq, Tk]` bool: query i reads the keys j ≤ i + lookahead (0: the standard causal mask;
    1: the one-step look-ahead of Sander et al. Eq. 6)."""
    return torch.ones(tq, tk, dtype=torch.bool, device=device).tril(lookahead)


def pe_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: torch.Tensor,
                           lookahead: int = 0) -> torch.Tensor:
    """O[b, h, i] = Σ_{j ≤ i + lookahead} P[h, i, j] (q_bhi · k_bhj) v_bhj (spec §7 item 2).

    Args:
        q: [B, H, Tq, K]. k: [B, H, Tk, K]. v: [B, H, Tk, V]. p: [H, Tq, Tk] (shared by the batch).
        lookahead: keys j ≤ i + lookahead are read.

    Returns:
        [B, H, Tq, V].
    """
    m = causal_mask(q.shape[-2], k.shape[-2], lookahead, q.device)
    return ((q @ k.transpose(-1, -2)) * (p * m)) @ v


def pe_attention_backward_reference(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                                    v: torch.Tensor, p: torch.Tensor, lookahead: int = 0
                                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv, dp) of Σ dout ⊙ O: with S = q kᵀ, W = S ⊙ P ⊙ M and G = dout vᵀ,
    dv = Wᵀ dout, dq = (G ⊙ P ⊙ M) k, dk = (G ⊙ P ⊙ M)ᵀ q, dp = Σ_b G ⊙ S ⊙ M."""
    m = causal_mask(q.shape[-2], k.shape[-2], lookahead, q.device)
    pm = p * m
    with torch.no_grad():         # a closed form, not differentiated: reuse the [B, H, Tq, Tk] buffers
        s = q @ k.transpose(-1, -2)
        g = dout @ v.transpose(-1, -2)
        dp = (g * s).sum(0) * m
        ds, w = g.mul_(pm), s.mul_(pm)
        return ds @ k, ds.transpose(-1, -2) @ q, w.transpose(-1, -2) @ dout, dp
