"""Diagnostics of attention weights: eigenvector alignment, value weights, head parallelism.

Flat parameter layouts follow docs/conventions.md: `MergedKQ` is `v [H], U [H, D, D]`,
`SeparateKQ` is `v [H], K [H, R, D], Q [H, R, D]`, `CubicMLP` is `w2 [H], W1 [H, D·D]`; the value
weights `v [H]` always come first.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from fastattn import configs as layout
from fastattn.models.linear_attention import MergedConfig, SeparateConfig

__all__ = [
    "alignment",
    "best_aligned",
    "effective_rank",
    "head_cosine_similarity",
    "participation_ratio",
    "split_merged",
    "split_separate",
    "value_weights",
]


def alignment(weights: ArrayLike, eigvecs: ArrayLike) -> np.ndarray:
    """Alignment |e_dᵀ k| / ‖k‖ of key (or query) vectors with the eigenvectors of Λ (Fig. 3c).

    Args:
        weights: K `[H, D]` (rank 1) or `[H, R, D]`; any leading shape `[..., D]` works.
        eigvecs: E `[D, D]`, column d is e_d (orthonormal).
    Returns:
        `[..., D]` (`[H, D]` or `[H, R, D]`); entry d is |cos| of the angle to e_d, in [0, 1]
        (each row's squares sum to 1). Zero vectors give zeros.
    """
    k = np.asarray(weights, dtype=np.float64)
    e = np.asarray(eigvecs, dtype=np.float64)
    if k.shape[-1] != e.shape[0]:
        raise ValueError(f"last axis of weights ({k.shape[-1]}) must match eigvecs ({e.shape})")
    proj = np.abs(k @ e)
    norm = np.linalg.norm(k, axis=-1, keepdims=True)
    return np.divide(proj, norm, out=np.zeros_like(proj), where=norm > 0)


def best_aligned(weights: ArrayLike, eigvecs: ArrayLike) -> np.ndarray:
    """Index of the best-aligned eigenvector per head (and rank): argmax_d of `alignment`.

    Returns:
        int array `[H]` or `[H, R]`.
    """
    return np.argmax(alignment(weights, eigvecs), axis=-1)


def value_weights(params: ArrayLike, n_heads: int) -> np.ndarray:
    """Per-head value weights over a trajectory from flat parameter snapshots.

    Args:
        params: `[T, P]` (or `[P]`) flat parameter vectors whose first H entries are `v [H]`.
        n_heads: H.
    Returns:
        v `[T, H]` (or `[H]`).
    """
    p = np.asarray(params, dtype=np.float64)
    return p[..., :n_heads].copy()


def split_merged(params: ArrayLike, n_heads: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Unflatten `MergedKQ` / `CubicMLP` parameters `[..., H (1 + D²)]` → v `[..., H]`,
    U `[..., H, D, D]` (for the MLP, W1[h].reshape(D, D))."""
    b = layout.unflatten(MergedConfig(dim, n_heads), params)
    return b["v"], b["U"]


def split_separate(
    params: ArrayLike, n_heads: int, rank: int, dim: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unflatten `SeparateKQ` parameters `[..., H (1 + 2RD)]` → v `[..., H]`, K, Q `[..., H, R, D]`."""
    b = layout.unflatten(SeparateConfig(dim, n_heads, rank=rank), params)
    return b["v"], b["K"], b["Q"]


def _rows(w: ArrayLike) -> np.ndarray:
    a = np.asarray(w, dtype=np.float64)
    return a.reshape(a.shape[0], -1)


def head_cosine_similarity(weights: ArrayLike) -> np.ndarray:
    """Cosine similarity of vec(U_i) between heads (App. D.7: parallel heads ⇒ |cos| = 1).

    Args:
        weights: U `[H, D, D]` or W1 `[H, D²]`.
    Returns:
        `[H, H]` matrix of cos(vec U_i, vec U_j); rows of zero heads are 0.
    """
    w = _rows(weights)
    norm = np.linalg.norm(w, axis=1)
    unit = np.divide(w, norm[:, None], out=np.zeros_like(w), where=norm[:, None] > 0)
    return unit @ unit.T


def participation_ratio(weights: ArrayLike) -> float:
    """Participation ratio (Σ σ_k²)² / Σ σ_k⁴ of the singular values of W1 = [vec U_i]_i.

    1 for parallel heads (rank-1 W1, App. D.7), up to min(H, D²) for equal singular values.

    Args:
        weights: U `[H, D, D]` or W1 `[H, D²]`.
    """
    s2 = np.linalg.svd(_rows(weights), compute_uv=False) ** 2
    tot = s2.sum()
    return float(tot**2 / np.sum(s2**2)) if tot > 0 else 0.0


def effective_rank(weights: ArrayLike, rtol: float = 1e-3) -> int:
    """Number of singular values of W1 `[H, D²]` (or U `[H, D, D]`) above rtol × the largest."""
    s = np.linalg.svd(_rows(weights), compute_uv=False)
    return int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0
