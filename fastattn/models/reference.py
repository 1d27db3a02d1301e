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


def ar_diag_heads(tokens: torch.Tensor, A: torch.Tensor, B: torch.Tensor, P: torch.Tensor,
                  T: int) -> torch.Tensor:
    """Sander et al. Eq. 6, head by head: Σ_h Σ_{t=1}^{T} P_{T−1,t} ⟨e_t | A^h e_{T−1}⟩ B^h e_t with
    A^h = diag(A[h]), B^h = diag(B[h]) and ⟨x | y⟩ = y* x (the query conjugated).

    tokens `[N, ≥T, d]`, A, B `[H, d]`, P `[T_max, T_max]` (1-based P_{T−1,t} is P[T−2, t−1]) → `[N, d]`.
    """
    out = torch.zeros_like(tokens[:, 0])
    query = tokens[:, T - 2]
    for h in range(A.shape[0]):
        a, b = A[h].to(tokens.dtype), B[h].to(tokens.dtype)
        for t in range(T):
            e = tokens[:, t]
            score = ((a * query).conj() * e).sum(-1)                          # (A^h e_{T−1})* e_t
            out = out + P[T - 2, t] * score[:, None] * (b * e)
    return out


def ar_augmented(tokens: torch.Tensor, A: torch.Tensor, B: torch.Tensor, T: int) -> torch.Tensor:
    """Sander et al. Eq. 4: (e_T + Σ_{t=1}^{T} ⟨A e_T | e_t⟩ B e_t)_{1:d}, ⟨x | y⟩ = y* x (the key
    conjugated), with full matrices A, B `[3d, 3d]`. tokens `[N, ≥T, 3d]` → `[N, d]`."""
    d = tokens.shape[-1] // 3
    A, B = A.to(tokens.dtype), B.to(tokens.dtype)
    query = tokens[:, T - 1] @ A.T                                             # A e_T
    out = tokens[:, T - 1].clone()
    for t in range(T):
        e = tokens[:, t]
        out = out + (e.conj() * query).sum(-1, keepdim=True) * (e @ B.T)
    return out[:, :d]


def ar_augmented_layers(tokens: torch.Tensor, params: dict[str, torch.Tensor], layers: int,
                        softmax: bool = False) -> torch.Tensor:
    """AUG-L (spec §3.3) position by position: x ← x + LN(W_O Σ_{t'≤t} a_{t,t'} v_{t'} + b_O) with
    a_{t,t'} = q_t·k_{t'}/√E (linear) or exp(q_t·k_{t'}/√E) / Σ_{s≤t} exp(q_t·k_s/√E) (`softmax`,
    App. B), then, when `params` holds an MLP (W1, b1, W2, b2, ln2_w, ln2_b: App. B's full
    transformer), x ← x + LN₂(W₂ max(0, W₁ x + b₁) + b₂); finally W_fc x + b_fc. tokens `[N, T, E]`,
    params as `ARAugmentedLayers` / `ARTransformer` name them → `[N, T, E]`."""
    x = tokens
    E = x.shape[-1]

    def norm(a: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        mean, var = a.mean(-1, keepdim=True), a.var(-1, unbiased=False, keepdim=True)
        return (a - mean) / torch.sqrt(var + 1e-5) * w + b

    for layer in range(layers):
        def lin(name: str, z: torch.Tensor, layer: int = layer) -> torch.Tensor:
            return z @ params[f"W{name}"][layer].T + params[f"b{name}"][layer]

        out = []
        for t in range(x.shape[1]):
            scores = [(lin("q", x[:, t]) * lin("k", x[:, s])).sum(-1, keepdim=True) / E ** 0.5
                      for s in range(t + 1)]
            if softmax:
                total = sum(torch.exp(c) for c in scores)
                scores = [torch.exp(c) / total for c in scores]
            acc = sum(c * lin("v", x[:, s]) for s, c in enumerate(scores))
            y = x[:, t] + norm(lin("o", acc), params["ln_w"][layer], params["ln_b"][layer])
            if "W1" in params:
                hidden = torch.clamp(lin("1", y), min=0)
                y = y + norm(lin("2", hidden), params["ln2_w"][layer], params["ln2_b"][layer])
            out.append(y)
        x = torch.stack(out, 1)
    return x @ params["fc_w"].T + params["fc_b"]


def linear_transformer(Z: torch.Tensor, wp: torch.Tensor, wq: torch.Tensor, n: int) -> torch.Tensor:
    """f(Z) = Z + W^P (Z Zᵀ/N) W^Q Z (Mainali & Teixeira 2025, Eq. 1): Z `[B, 2d, N+1]` (the last
    column the query [x_q; 0]), W^P, W^Q `[2d, 2d]`, N the number of context pairs → `[B, 2d, N+1]`."""
    return Z + wp @ (Z @ Z.transpose(1, 2) / n) @ wq @ Z


def ar_non_augmented(tokens: torch.Tensor, params: dict[str, torch.Tensor], lookahead: int
                     ) -> torch.Tensor:
    """NONAUG-§6 (spec §3.6, the authors' non_augmented.py) position by position: for position t
    and head h, the softmax over t' ≤ t + lookahead of (W_Q^h pos_t + b_Q^h)·(W_K^h pos_t' + b_K^h)/√E,
    written out, weights (q_t·k_t'/√E) v_t'; the heads summed, then W_O, layer norm (explicit),
    W_fc. tokens `[N, T, E]`, params as `NonAugmented` names them → `[N, T, d]` (row t predicts
    s_{t+2} with the look-ahead, s_{t+1} without; 0-based)."""
    tmax, E = tokens.shape[1:]
    out = []
    for t in range(tmax):
        acc = torch.zeros_like(tokens[:, 0])
        keys = range(min(tmax, t + lookahead + 1))
        for h in range(params["Wq"].shape[0]):
            def lin(name: str, z: torch.Tensor, h: int = h) -> torch.Tensor:
                return z @ params[f"W{name}"][h].T + params[f"b{name}"][h]

            pos = params["pos"]
            logits = torch.stack([lin("q", pos[t]) @ lin("k", pos[s]) / E ** 0.5 for s in keys])
            e = torch.exp(logits - logits.max())
            for s in keys:
                score = (lin("q", tokens[:, t]) * lin("k", tokens[:, s])).sum(-1, keepdim=True)
                acc = acc + e[s] / e.sum() * score / E ** 0.5 * lin("v", tokens[:, s])
        o = acc @ params["Wo"].T + params["bo"]
        mean, var = o.mean(-1, keepdim=True), o.var(-1, unbiased=False, keepdim=True)
        y = (o - mean) / torch.sqrt(var + 1e-5) * params["ln_w"] + params["ln_b"]
        out.append(y @ params["fc_w"].T + params["fc_b"])
    return torch.stack(out, 1)
