"""Pure-torch ground truth for the ICL linear read-out (any dtype, float64 included)."""

from __future__ import annotations

import torch

__all__ = ["icl_beta_reference", "icl_readout_backward_reference",
           "icl_readout_next_token_backward_reference", "icl_readout_next_token_reference",
           "icl_readout_of_beta_reference", "icl_readout_reference"]


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


def icl_readout_backward_reference(dout: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                                   x_q: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor
                                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dy, dx_q, dΓ) of Σ dout ⊙ ŷ, dout `[B, H]`, given the forward's β `[B, D]`:
    dβ_b = Σ_h dout_bh Γ_h x_q,b, dx_q,b = Σ_h dout_bh Γ_hᵀ β_b, dΓ_h = Σ_b dout_bh β_b x_q,bᵀ, and
    through β = (1/N) Σ_n y_n x_n: dx_bn = y_bn dβ_b / N, dy_bn = x_bnᵀ dβ_b / N."""
    n = x.shape[1]
    dbeta = torch.einsum("bh,hij,bj->bi", dout, gamma, x_q)
    dxq = torch.einsum("bh,hij,bi->bj", dout, gamma, beta)
    dgamma = torch.einsum("bh,bi,bj->hij", dout, beta, x_q)
    dx = y[:, :, None] * dbeta[:, None, :] / n
    dy = torch.einsum("bnd,bd->bn", x, dbeta) / n
    return dx, dy, dxq, dgamma


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


def icl_readout_next_token_backward_reference(dout: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                                              gamma: torch.Tensor
                                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dy, dΓ) of Σ dout ⊙ ŷ, dout `[B, T−1, H]`: the read-out's gradients at each position
    t (β_t the prefix mean, x_t the query), with token m's share of every prefix t > m gathered
    by a reverse cumulative sum."""
    t = x.shape[1]
    counts = torch.arange(1, t, dtype=x.dtype, device=x.device)
    prefix = torch.cumsum(y[..., None] * x, dim=1)[:, :-1] / counts[None, :, None]  # [B, T-1, D]
    xn = x[:, 1:]
    dgamma = torch.einsum("bth,bti,btj->hij", dout, prefix, xn)
    dxn = torch.einsum("bth,hij,bti->btj", dout, gamma, prefix)
    dprefix = torch.einsum("bth,hij,btj->bti", dout, gamma, xn) / counts[None, :, None]
    r = torch.flip(torch.cumsum(torch.flip(dprefix, [1]), 1), [1])  # r[:, m] = Σ_{t>=m} dS_t
    r = torch.cat([r, torch.zeros_like(r[:, :1])], 1)  # [B, T, D]
    dx = y[..., None] * r
    dx[:, 1:] += dxn
    dy = (x * r).sum(-1)
    return dx, dy, dgamma
