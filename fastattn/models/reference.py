"""The papers' literal formulas on the full `(D+1) × (N+1)` token matrix. For tests only.

X has the tokens as *columns* (the papers' layout): X[:, n] = [x_n; y_n], the last column is the
query [x_q; 0]. The models evaluate the same functions in the fast β-form; the tests check the two
agree to float64 precision.
"""

from __future__ import annotations

import torch


def token_matrix(tokens: torch.Tensor) -> torch.Tensor:
    """The papers' X `[B, D+1, N+1]` from our row layout `[B, N+1, D+1]` (docs/conventions.md)."""
    return tokens.transpose(1, 2)


def linear_attention(X: torch.Tensor, wv: torch.Tensor, wkq: torch.Tensor,
                     n: int | torch.Tensor) -> torch.Tensor:
    """ATTN_M(X) = X + Σ_i (1/N) W^V_i X Xᵀ W^KQ_i X (Zhang et al. Eq. 3 with merged W^KQ).

    X `[B, D+1, N+1]`, W^V, W^KQ `[H, D+1, D+1]`, n the context length (int or `[B]`) → `[B, D+1, N+1]`.
    """
    n = torch.as_tensor(n, dtype=X.dtype).reshape(-1, 1, 1)
    xxt = X @ X.transpose(1, 2)                                              # [B, D+1, D+1]
    heads = torch.einsum("hij,bjk,hkl,bln->bin", wv, xxt, wkq, X)          # [B, D+1, N+1]
    return X + heads / n


def separate_linear_attention(X: torch.Tensor, wv: torch.Tensor, wk: torch.Tensor,
                              wq: torch.Tensor, n: int | torch.Tensor) -> torch.Tensor:
    """ATTN_S(X) = X + Σ_i (1/N) W^V_i X Xᵀ W^K_iᵀ W^Q_i X, W^K_i, W^Q_i `[R, D+1]` (Eq. 12, 84)."""
    return linear_attention(X, wv, wk.transpose(1, 2) @ wq, n)


def softmax_attention(X: torch.Tensor, wv: torch.Tensor, wkq: torch.Tensor,
                      rho: float = 1.0) -> torch.Tensor:
    """X + Σ_i W^V_i X smax(Xᵀ W^KQ_i X / ρ), the softmax normalising each column over the key
    (row) index, all N+1 tokens included (Zhang et al. §2.2)."""
    scores = torch.einsum("bim,hij,bjn->bhmn", X, wkq, X) / rho              # [B, H, N+1, N+1]
    weights = torch.softmax(scores, dim=-2)
    return X + torch.einsum("hij,bjm,bhmn->bin", wv, X, weights)


def separate_softmax_attention(X: torch.Tensor, wv: torch.Tensor, wk: torch.Tensor,
                               wq: torch.Tensor, rho: float = 1.0) -> torch.Tensor:
    """Softmax attention with separate keys and queries: W^KQ_i = W^K_iᵀ W^Q_i."""
    return softmax_attention(X, wv, wk.transpose(1, 2) @ wq, rho)


def query_readout(out: torch.Tensor) -> torch.Tensor:
    """ŷ_q: the bottom-right entry of ATTN(X) `[B, D+1, N+1]` → `[B]` (Eq. 3)."""
    return out[:, -1, -1]


def linear_transformer(Z: torch.Tensor, wp: torch.Tensor, wq: torch.Tensor, n: int) -> torch.Tensor:
    """f(Z) = Z + W^P (Z Zᵀ/N) W^Q Z (Mainali & Teixeira 2025, Eq. 1): Z `[B, 2d, N+1]` (the last
    column the query [x_q; 0]), W^P, W^Q `[2d, 2d]`, N the number of context pairs → `[B, 2d, N+1]`."""
    return Z + wp @ (Z @ Z.transpose(1, 2) / n) @ wq @ Z
