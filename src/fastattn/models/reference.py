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


def disentangled_transformer(X: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor, W3: torch.Tensor,
                             mask: str = "strict") -> torch.Tensor:
    """Musat et al. 2025 Eq. 5–7 literally: H1 = [X | σ(X W1 Xᵀ) X], H2 = [H1 | σ(H1 W2 H1ᵀ) H1],
    Ỹ = H2 W3, every layer on every row; the query's output Ỹ[:, -1] `[B, D]`. σ masks key j > i
    ("inclusive") or j ≥ i ("strict"; a row with no key attends to nothing)."""
    L = X.shape[1]
    keep = torch.ones(L, L, dtype=torch.bool).tril(-1 if mask == "strict" else 0)

    def sigma(S):
        S = S.masked_fill(~keep, float("-inf"))
        m = S.max(dim=-1, keepdim=True).values
        w = torch.exp(S - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
        z = w.sum(-1, keepdim=True)
        return w / torch.where(z > 0, z, torch.ones_like(z))

    H1 = torch.cat([X, sigma(X @ W1 @ X.transpose(1, 2)) @ X], dim=-1)
    H2 = torch.cat([H1, sigma(H1 @ W2 @ H1.transpose(1, 2)) @ H1], dim=-1)
    return (H2 @ W3)[:, -1]


def multihead_softmax_attention(Z: torch.Tensor, ov: torch.Tensor, kq: torch.Tensor
                                ) -> torch.Tensor:
    """TF(Z) = Z + Σ_h OV^(h) Z smax∘msk(Zᵀ KQ^(h) Z) (He et al. 2025, spec §1.2), the softmax
    normalising each column (query j) over the keys i < j: a strictly causal mask, so the query
    (last column) attends to the L context tokens only. Column 0 has no key and gets no update.

    Z `[B, D, L+1]`, OV^(h) and KQ^(h) `[H, D, D]` → `[B, D, L+1]`; ŷ_q is the entry [-1, -1].
    """
    n = Z.shape[-1]
    scores = torch.einsum("bim,hij,bjn->bhmn", Z, kq, Z)                     # [B, H, keys, queries]
    strict = torch.ones(n, n, dtype=torch.bool, device=Z.device).triu(1)     # key m < query n
    weights = torch.softmax(scores.masked_fill(~strict, float("-inf")), dim=-2).nan_to_num(0.0)
    return Z + torch.einsum("hij,bjm,bhmn->bin", ov, Z, weights)


def multihead_linear_attention(Z: torch.Tensor, ov: torch.Tensor, kq: torch.Tensor,
                               norm_context: int) -> torch.Tensor:
    """LinTF(Z) = Z + (1/L) Σ_h OV^(h) Z Zᵀ KQ^(h) Z, no softmax and no mask (spec §1.8);
    Z `[B, D, L+1]`, OV, KQ `[H, D, D]`, L = `norm_context` → `[B, D, L+1]`."""
    return Z + torch.einsum("hij,bjk,bmk,hml,bln->bin", ov, Z, Z, kq, Z) / norm_context


def kernel_regressors(X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor, omega: torch.Tensor,
                      mu: torch.Tensor) -> torch.Tensor:
    """ŷ_q = Σ_h μ_h Σ_ℓ y_ℓ exp(ω_h x_ℓᵀ x_q) / Σ_m exp(ω_h x_mᵀ x_q) (spec §1.5), literally (no
    max subtraction): X `[B, L, d]`, y `[B, L]`, x_q `[B, d]`, ω, μ `[H]` → `[B]`."""
    s = torch.einsum("bld,bd->bl", X, x_q)
    e = torch.exp(omega[None, :, None] * s[:, None, :])                      # [B, H, L]
    return torch.einsum("h,bhl,bl->b", mu, e / e.sum(-1, keepdim=True), y)
