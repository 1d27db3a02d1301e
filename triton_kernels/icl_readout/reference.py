"""Pure-torch ground truth for the ICL linear read-out (any dtype, float64 included)."""

from __future__ import annotations

import torch

__all__ = ["icl_beta_reference", "icl_readout_next_token_reference", "icl_readout_of_beta_reference",
           "icl_readout_reference"]


def icl_beta_reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """β_b = (1/N) Σ_n y_bn x_bn: x `[B, N, D]`, y `[B, N]` → `[B, D]`."""
    return torch.einsum("bn,bnd->bd", y, x) / x.shape[1]


def icl_readout_of_beta_reference(beta: torch.Tensor, x_q: torch.Tensor,
                                  gamma: torch.Tensor) -> torch.Tensor:
    """ŷ[b, h] = β_bᵀ Γ_h x_q,b: beta `[B, D]`, x_q `[B, D]`, gamma `[H, D, D]` → `[B, H]`."""
    return torch.einsum("bi,hij,bj->bh", beta, gamma, x_q)


def icl_readout_reference(x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                          gamma: torch.Tensor) -> torch.Tensor:
    """ŷ[b, h] = β_bᵀ Γ_h x_q,b with β_b = (1/N) Σ_n y_bn x_bn.

    Args:
        x: [B, N, D] context inputs.
        y: [B, N] context labels.
        x_q: [B, D] query input.
        gamma: [H, D, D] per-head effective matrices.

    Returns:
        [B, H] per-head predictions (sum over H for the model's prediction).
    """
    return icl_readout_of_beta_reference(icl_beta_reference(x, y), x_q, gamma)


def icl_readout_next_token_reference(x: torch.Tensor, y: torch.Tensor,
                                     gamma: torch.Tensor) -> torch.Tensor:
    """Next-token predictions: position n = 2..T uses β over the first n−1 tokens and x_n.

    Args:
        x: [B, T, D].
        y: [B, T].
        gamma: [H, D, D].

    Returns:
        [B, T−1, H]; entry t−1 is the prediction of y at 0-based position t = 1..T−1.
    """
    t = x.shape[1]
    prefix = torch.cumsum(y[..., None] * x, dim=1)[:, :-1]  # [B, T-1, D]
    counts = torch.arange(1, t, dtype=x.dtype, device=x.device)
    beta = prefix / counts[None, :, None]
    return torch.einsum("bti,hij,btj->bth", beta, gamma, x[:, 1:])
