"""Pure-torch ground truth for the cubic-feature contraction (any dtype, float64 included)."""

from __future__ import annotations

import torch

__all__ = ["cubic_hidden_backward_reference", "cubic_hidden_reference",
           "cubic_second_moments_reference"]


def cubic_hidden_reference(beta: torch.Tensor, x_q: torch.Tensor, w1: torch.Tensor) -> torch.Tensor:
    """hidden[b, h] = sum_ij W1[h, i*D + j] beta[b, i] x_q[b, j].

    Args:
        beta: [B, D].
        x_q: [B, D].
        w1: [H, D*D], row-major flattening of the [D, D] block of each hidden unit.

    Returns:
        [B, H].
    """
    b, d = beta.shape
    if b * d * d <= 1 << 24:  # small D: one GEMM on the materialised feature is fastest on CPU
        return (beta[:, :, None] * x_q[:, None, :]).reshape(b, d * d) @ w1.T
    return torch.einsum("bi,hij,bj->bh", beta, w1.reshape(-1, d, d), x_q)


def cubic_hidden_backward_reference(dout: torch.Tensor, beta: torch.Tensor, x_q: torch.Tensor,
                                    w1: torch.Tensor
                                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dβ, dx_q, dW1) of Σ dout ⊙ hidden, dout `[B, H]`: with G_h the [D, D] block of W1's row h,
    dβ_b = Σ_h dout_bh G_h x_q,b, dx_q,b = Σ_h dout_bh G_hᵀ β_b, dG_h = Σ_b dout_bh β_b x_q,bᵀ
    (flattened like W1)."""
    d = beta.shape[1]
    g = w1.reshape(-1, d, d)
    return (torch.einsum("bh,hij,bj->bi", dout, g, x_q),
            torch.einsum("bh,hij,bi->bj", dout, g, beta),
            torch.einsum("bh,bi,bj->hij", dout, beta, x_q).reshape(w1.shape))


def cubic_second_moments_reference(
    beta: torch.Tensor, x_q: torch.Tensor, y_q: torch.Tensor, chunk: int = 8192
) -> dict[str, torch.Tensor]:
    """Empirical second moments of z = (beta x_qᵀ).flatten() over the batch.

    Args:
        beta: [B, D].
        x_q: [B, D].
        y_q: [B].
        chunk: batch rows per step; z is materialised only ``chunk`` rows at a time.

    Returns:
        dict with ``zz`` [D², D²] = mean_b z zᵀ (exact), ``zy`` [D, D] = mean_b y_q β x_qᵀ
        (exact; flatten row-major for the [D²] vector), ``yy`` [] = mean_b y_q², and the Kronecker
        factors ``beta_beta`` = mean ββᵀ and ``xq_xq`` = mean x_q x_qᵀ. ``kron(beta_beta, xq_xq)``
        equals ``zz`` in population when β and x_q are independent (true for the ICL task: x_q is
        drawn apart from the context); on a finite data set it is only an approximation.
    """
    b, d = beta.shape
    zz = beta.new_zeros(d * d, d * d)
    for s in range(0, b, chunk):
        z = (beta[s:s + chunk, :, None] * x_q[s:s + chunk, None, :]).reshape(-1, d * d)
        zz += z.T @ z
    return {
        "zz": zz / b,
        "zy": torch.einsum("b,bi,bj->ij", y_q, beta, x_q) / b,
        "yy": (y_q * y_q).mean(),
        "beta_beta": beta.T @ beta / b,
        "xq_xq": x_q.T @ x_q / b,
    }
