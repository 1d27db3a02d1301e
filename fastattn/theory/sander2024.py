"""Closed-form theory of Sander, Giryes, Suzuki, Blondel & Peyré (ICML 2024), "How do Transformers
Perform In-Context Autoregressive Learning?" (arXiv 2402.05787). docs/sander2024.md.

Conventions (spec §1): the loss is ℓ = Σ_{T=2}^{T_max} E‖T_θ(e_{1:T}) − s_{T+1}‖² (a sum over T, no
½) with s_1 = 1_d; P is 0-based, so the paper's row P_{T−1,·} (context length T) is `P[T − 2, :T]`
and p_T = P[T − 2, T − 1], p_{T−1} = P[T − 2, T − 2]; C = BᵀA with A, B `[H, d]` (the heads'
diagonals as rows). Orthogonal contexts pair the conjugate eigenvalues at 0-based (2k, 2k+1).
Every function takes plain numbers or numpy arrays.

Errata handled here (spec §9): Prop. 4's formula double-counts p_{T−1}²‖C‖_F² (`unitary_row_loss`
is the correct loss, `paper=True` the printed one); Prop. 6's main-text equations are garbled (the
family below is the appendix A.9 version); Prop. 7 calls H "the Hessian" where ∇²l = 2H.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "S0_CONVENTIONS",
    "ar_fit_rollout_mse",
    "augmented_optimum",
    "inner_gd",
    "inner_gd_closed_form",
    "inner_gd_mse",
    "lemma3_parameters",
    "orthogonal_row_loss",
    "pe_early_stopped",
    "pe_hessian",
    "pe_loss",
    "population_loss",
    "prop3_parameters",
    "prop6_block",
    "prop6_parameters",
    "rotation",
    "successor_conflicts",
    "unitary_row_loss",
]

S0_CONVENTIONS = ("backward", "zero")


# ----------------------------------------------------------------------------- Prop. 2 (AUG-1)
def augmented_optimum(d: int, tmax: int, s0: str = "backward") -> tuple[float, float]:
    """(η*, ℓ*) of the augmented one-layer model under 𝒞_U (Prop. 2, Lemma 4; spec §5.3).

    s0="backward" (s_0 = W⁻¹ s_1, the proof's convention): η* = Σ_{T=2}^{T_max} T / Σ_T (T² +
    (d−1)T); s0="zero" (the authors' code pads s_0 = 0): the same sums over m = 1..T_max−1,
    η* = 3/(2T_max + 3d − 4). ℓ* = d[(T_max − 1) − (Σ T)² / Σ (T² + (d−1)T)], the loss at
    a3 b1 = η* with every other c_{α,β} = 0.
    """
    if s0 not in S0_CONVENTIONS:
        raise ValueError(f"s0 must be one of {S0_CONVENTIONS}; got {s0!r}")
    T = np.arange(2, tmax + 1) if s0 == "backward" else np.arange(1, tmax)
    num, den = float(T.sum()), float((T * T + (d - 1) * T).sum())
    return num / den, d * ((tmax - 1) - num * num / den)


# ----------------------------------------------------------------------------- Prop. 4, §5.7
def _row_terms(C: np.ndarray, p: np.ndarray):
    C, p = np.asarray(C, dtype=np.float64), np.asarray(p, dtype=np.float64)
    T = p.size
    rest = np.delete(p, T - 2)                                                 # p_t, t ≠ T−1
    return C, p[T - 1], p[T - 2], rest


def unitary_row_loss(C: ArrayLike, p: ArrayLike, paper: bool = False) -> float:
    """l_U(C, p) = E‖T_θ(e_{1:T}) − λ^T‖² for one context length T = len(p) (Prop. 4 corrected):
    p_{T−1}² ‖C1‖² + Σ_{t≠T−1} p_t² ‖C‖_F² − 2 p_T tr C + d. paper=True: Prop. 4 as printed
    (+ p_{T−1}² ‖C‖_F², which the authors' unitary.py also uses)."""
    C, pT, pm, rest = _row_terms(C, p)
    F = float((C * C).sum())
    loss = pm ** 2 * float(C.sum(1) @ C.sum(1)) + float(rest @ rest) * F - 2 * pT * np.trace(C) \
        + C.shape[0]
    return float(loss + (pm ** 2 * F if paper else 0.0))


def orthogonal_row_loss(C: ArrayLike, p: ArrayLike) -> float:
    """l_O(C, p) for commuting orthogonal contexts (spec §5.7): l_U + 2 p_{T−1} Q Σ_i R_i c_i +
    (Q² − Q2) Σ_i c_i², c_i = C_{i,π(i)}, R = C1, Q = Σ_{t≠T−1} p_t, Q2 = Σ_{t≠T−1} p_t²."""
    C, _, pm, rest = _row_terms(C, p)
    d = C.shape[0]
    if d % 2:
        raise ValueError(f"orthogonal contexts need an even d (conjugate pairs); got d={d}")
    c = C[np.arange(d), np.arange(d) ^ 1]
    Q, Q2 = rest.sum(), rest @ rest
    return unitary_row_loss(C, p) + float(2 * pm * Q * (C.sum(1) @ c) + (Q * Q - Q2) * (c @ c))


def population_loss(C: ArrayLike, P: ArrayLike, context: str = "unitary") -> float:
    """ℓ = Σ_{T=2}^{T_max} l(C, P[T−2, :T]) for P `[T_max, T_max]`; context "unitary",
    "unitary_paper" (Prop. 4 as printed) or "orthogonal"."""
    P = np.asarray(P, dtype=np.float64)
    rows = [P[T - 2, :T] for T in range(2, P.shape[0] + 1)]
    if context == "orthogonal":
        return sum(orthogonal_row_loss(C, p) for p in rows)
    if context in ("unitary", "unitary_paper"):
        return sum(unitary_row_loss(C, p, paper=context == "unitary_paper") for p in rows)
    raise ValueError(f"context must be unitary, unitary_paper or orthogonal; got {context!r}")


# ----------------------------------------------------------------------------- global minima
def _positional(tmax: int, last: float, before: float = 0.0) -> np.ndarray:
    P = np.zeros((tmax, tmax))
    for T in range(2, tmax + 1):
        P[T - 2, T - 1], P[T - 2, T - 2] = last, before
    return P


def prop3_parameters(d: int, tmax: int, p_last: float = 1.0) -> tuple[np.ndarray, np.ndarray,
                                                                        np.ndarray]:
    """A zero-loss (A, B, P) under 𝒞_U with H = d heads (Prop. 3): A = I, B = I/p_T, P_{T−1,t} =
    p_T δ_{t=T} (so p_T C_ii = 1 and C is diagonal)."""
    return np.eye(d), np.eye(d) / p_last, _positional(tmax, p_last)


def lemma3_parameters(d: int, tmax: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rank-d/2 zero-loss (A, B, P) under 𝒞_O with H = d/2 heads (Lemma 3): head k reads the
    pair (2k, 2k+1) with a = 1, b = ½, so C = ½ blockdiag(J, …, J); P_{T−1,T} = 2, P_{T−1,T−1} = −1.
    It implements s_{T+1} = 2cos θ s_T − s_{T−1} (the identity 2cos θ R_θ − I = R_{2θ})."""
    if d % 2:
        raise ValueError(f"orthogonal contexts need an even d; got d={d}")
    A = np.zeros((d // 2, d))
    for k in range(d // 2):
        A[k, 2 * k:2 * k + 2] = 1.0
    return A, A / 2, _positional(tmax, 2.0, -1.0)


def prop6_block(p_last: float, p_before: float) -> np.ndarray:
    """The 2×2 block [[1/p_T, b'], [b', 1/p_T]], b' = −p_{T−1}/(p_T (p_T + p_{T−1})), of the
    Prop. 6 zero-loss family (appendix A.9; spec §5.9)."""
    if p_last == 0 or p_last + p_before == 0:
        raise ValueError("Prop. 6 needs p_T ≠ 0 and p_T + p_{T−1} ≠ 0")
    b = -p_before / (p_last * (p_last + p_before))
    return np.array([[1 / p_last, b], [b, 1 / p_last]])


def prop6_parameters(d: int, tmax: int, p_last: float, p_before: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(C, P) of the Prop. 6 family member with (p_T, p_{T−1}) shared by every T: C =
    blockdiag(prop6_block, …) `[d, d]`, P `[T_max, T_max]`."""
    if d % 2:
        raise ValueError(f"orthogonal contexts need an even d; got d={d}")
    C = np.kron(np.eye(d // 2), prop6_block(p_last, p_before))
    return C, _positional(tmax, p_last, p_before)


def rotation(theta: ArrayLike) -> np.ndarray:
    """R_θ = [[cos θ, −sin θ], [sin θ, cos θ]] `[..., 2, 2]` (Fig. 2: 2cos θ R_θ − I = R_{2θ})."""
    th = np.asarray(theta, dtype=np.float64)
    c, s = np.cos(th), np.sin(th)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


# ----------------------------------------------------------------------------- Prop. 7 (PE only)
def pe_hessian(T: int, mu: float) -> np.ndarray:
    """H `[T, T]` of Prop. 7: H_{tt'} = Re E λ^{2(t−t')} = sinc-type μ/(4π(t'−t)) sin(4π(t'−t)/μ),
    H_tt = 1, for λ = e^{iθ/μ}, θ ~ U(0, 2π). The PE-only loss is (p − e_T)ᵀ H (p − e_T) (∇² = 2H)."""
    k = np.subtract.outer(np.arange(T), np.arange(T)).astype(np.float64)
    x = 4 * math.pi * k / mu
    return np.where(k == 0, 1.0, np.sin(x) / np.where(k == 0, 1.0, x))


def pe_loss(P: ArrayLike, mu: float, d: int = 1) -> float:
    """Σ_{T=2}^{T_max} d (p − e_T)ᵀ H_T (p − e_T), p = P[T−2, :T]: the PE-only population loss
    (C = I) on 𝒲(μ) with d i.i.d. coordinates."""
    P = np.asarray(P, dtype=np.float64)
    total = 0.0
    for T in range(2, P.shape[0] + 1):
        q = P[T - 2, :T].copy()
        q[T - 1] -= 1.0
        total += d * float(q @ pe_hessian(T, mu) @ q)
    return total


def pe_early_stopped(tmax: int, mu: float, lr: float, steps: int) -> np.ndarray:
    """P `[T_max, T_max]` after `steps` of full-batch GD from P = 0 with learning rate `lr` on the
    row-averaged loss (1/(T_max−1)) Σ_T l_T (the authors' pe_only.py; spec §5.10):
    row T is p^{(k)} = e_T − (I − (2 lr/(T_max−1)) H_T)^k e_T. Unread entries stay 0."""
    P = np.zeros((tmax, tmax))
    for T in range(2, tmax + 1):
        M = np.eye(T) - (2 * lr / (tmax - 1)) * pe_hessian(T, mu)
        e = np.zeros(T)
        e[-1] = 1.0
        P[T - 2, :T] = e - np.linalg.matrix_power(M, steps) @ e
    return P


# ----------------------------------------------------------------------------- inner-loss GD
def inner_gd(states: ArrayLike, T: int, steps: int, lr: float) -> np.ndarray:
    """ŝ_{T+1} = W_L s_T after L = `steps` of GD from W_0 = 0 on L(W) = ½ Σ_{t<T} ‖s_{t+1} − W s_t‖²
    (Eq. 5; the Fig. 5 baseline). states `[N, ≥T, d]` (s_1..s_T, real or complex) → `[N, d]`."""
    s = np.asarray(states)
    x, y = s[:, :T - 1], s[:, 1:T]
    G = np.einsum("nti,ntj->nij", x, x.conj())                                # Σ s_t s_t*
    R = np.einsum("nti,ntj->nij", y, x.conj())                                # Σ s_{t+1} s_t*
    W = np.zeros_like(R)
    for _ in range(steps):
        W = W - lr * (W @ G - R)
    return np.einsum("nij,nj->ni", W, s[:, T - 1])


def inner_gd_closed_form(states: ArrayLike, T: int, steps: int, lr: float) -> np.ndarray:
    """`inner_gd` in closed form, W_L = R G⁻¹ (I − (I − ηG)^L), through G's eigendecomposition
    (G = Σ_{t<T} s_t s_t* Hermitian; its null space contributes nothing since R vanishes there)."""
    s = np.asarray(states)
    x, y = s[:, :T - 1], s[:, 1:T]
    G = np.einsum("nti,ntj->nij", x, x.conj())
    R = np.einsum("nti,ntj->nij", y, x.conj())
    vals, vecs = np.linalg.eigh(G)
    safe = np.where(vals > 1e-12 * max(1.0, float(np.abs(vals).max())), vals, np.inf)
    factor = np.where(np.isinf(safe), steps * lr, (1 - (1 - lr * vals) ** steps) / safe)
    ginv = np.einsum("nij,nj,nkj->nik", vecs, factor, vecs.conj())            # G⁻¹(I − (I−ηG)^L)
    return np.einsum("nij,njk,nk->ni", R, ginv, s[:, T - 1])


# ----------------------------------------------------------------------------- Fig. 4 (AR fit)
def ar_fit_rollout_mse(sequences: ArrayLike, rcond: float = 1e-10) -> np.ndarray:
    """Per-sequence MSE of the AR(1) fit of Fig. 4 (spec §6; the authors' fit_ar and generate):
    A = argmin Σ_{t<T} ‖s_{t+1} − A s_t‖², the minimum-norm least-squares solution
    A = Yᵀ (Xᵀ)⁺ with X = s_{1:T−1}, Y = s_{2:T} `[T−1, d]`, then the rollout ŝ_1 = s_1,
    ŝ_{t+1} = A ŝ_t, and mean_{t, i} (ŝ_{t,i} − s_{t,i})². sequences `[n, T, d]` → `[n]`.
    Singular values below rcond·σ_max of X count as zero (a repeated token makes X rank-deficient)."""
    s = np.asarray(sequences, dtype=np.float64)
    x, y = s[:, :-1], s[:, 1:]
    pinv = np.linalg.pinv(x.transpose(0, 2, 1), rcond=rcond)                # (Xᵀ)⁺ `[n, T−1, d]`
    roll = [s[:, 0]]
    for _ in range(s.shape[1] - 1):                          # A ŝ = Yᵀ ((Xᵀ)⁺ ŝ): O(T d), not d²
        roll.append(np.einsum("nti,nt->ni", y, np.einsum("ntj,nj->nt", pinv, roll[-1])))
    return np.mean((np.stack(roll, 1) - s) ** 2, axis=(1, 2))


def successor_conflicts(token_ids: ArrayLike) -> np.ndarray:
    """Whether each token sequence `[n, T]` has a token at t < T that recurs with a different
    successor `[n]` bool: with linearly independent token vectors exactly these sequences have no
    exact AR(1) fit (A s_t = s_{t+1} for all t < T asks one vector to map to two), so their Fig. 4
    MSE is positive and the others' is zero (the paper's "identical elements with differing
    successors")."""
    ids = np.asarray(token_ids)
    n, T = ids.shape
    out = np.zeros(n, dtype=bool)
    for i in range(T - 1):
        for j in range(i + 1, T - 1):
            out |= (ids[:, i] == ids[:, j]) & (ids[:, i + 1] != ids[:, j + 1])
    return out


def inner_gd_mse(states: ArrayLike, steps: ArrayLike, lrs: ArrayLike) -> np.ndarray:
    """MSE of the inner-loss GD baseline (Fig. 5; `inner_gd_closed_form`) at every context length
    and every (L, η) at once: `[len(steps), len(lrs), T_max]`, entry [l, k, T−1] the mean over
    sequences and coordinates of ‖W_L s_T − s_{T+1}‖²/d for T = 1..T_max (T = 1: W_L = 0).
    states `[N, T_max+1, d]` real (s_1..s_{T_max+1}). One eigendecomposition of each prefix Gram
    G_T = Σ_{t<T} s_t s_tᵀ serves every (L, η): W_L s_T = R_T V f(Λ) Vᵀ s_T with
    f(λ) = (1 − (1 − ηλ)^L)/λ (→ Lη at λ = 0, where R_T vanishes)."""
    s = np.asarray(states, dtype=np.float64)
    x, y = s[:, :-1], s[:, 1:]                                                # s_t, s_{t+1}
    outer = np.einsum("nti,ntj->ntij", x, x)
    G = np.cumsum(outer, axis=1) - outer                                      # Σ_{t'<t}, [N, T, d, d]
    cross = np.einsum("nti,ntj->ntij", y, x)
    R = np.cumsum(cross, axis=1) - cross
    vals, vecs = np.linalg.eigh(G)
    rv = R @ vecs                                                             # R V
    u = np.einsum("ntji,ntj->nti", vecs, x)                                   # Vᵀ s_T
    small = vals <= 1e-12 * max(1.0, float(np.abs(vals).max()))
    safe = np.where(small, 1.0, vals)
    out = np.empty((len(np.atleast_1d(steps)), len(np.atleast_1d(lrs)), x.shape[1]))
    for i, L in enumerate(np.atleast_1d(steps)):
        for k, lr in enumerate(np.atleast_1d(lrs)):
            f = np.where(small, L * lr, (1 - (1 - lr * vals) ** L) / safe)
            pred = np.einsum("ntij,ntj->nti", rv, f * u)
            out[i, k] = np.mean((pred - y) ** 2, axis=(0, 2))
    return out
