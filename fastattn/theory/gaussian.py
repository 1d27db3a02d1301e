"""Moments of Gaussian tokens and of their empirical covariance, shared by every closed form.

Tokens are x ~ N(0, Λ) and Λ̂ = (1/N) Σ_{n≤N} x_n x_nᵀ (docs/conventions.md, 1/N). Every moment below
is affine in 1/N, so a random context length N enters only through `inv_n` = E(1/N) (Zhang et al.
2025, Eq. 24). Pure functions of numpy arrays (float64); matrices are `[D, D]`.

The C++ core keeps its own copy of `beta_second_moment` (it is the fast path); a test checks the two
agree (tests/theory/test_gaussian.py).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def _square(name: str, m: ArrayLike, dim: int | None = None) -> np.ndarray:
    a = np.asarray(m, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or (dim is not None and a.shape[0] != dim):
        want = f"[{dim}, {dim}]" if dim is not None else "square [D, D]"
        raise ValueError(f"{name} must be {want}; got shape {a.shape}")
    return a


def gaussian_fourth_moment(cov: ArrayLike, a: ArrayLike) -> np.ndarray:
    """E[x xᵀ A x xᵀ] = Λ A Λ + Λ Aᵀ Λ + tr(AΛ) Λ for x ~ N(0, Λ) (Isserlis; Zhang et al. spec §4.3,
    Mainali et al. spec (M2)). `cov` Λ and `a` A are `[D, D]`; returns `[D, D]`."""
    lam = _square("cov", cov)
    a = _square("a", a, lam.shape[0])
    return lam @ a @ lam + lam @ a.T @ lam + np.trace(a @ lam) * lam


def wishart_second_moment(cov: ArrayLike, a: ArrayLike, inv_n: float) -> np.ndarray:
    """E[Λ̂ A Λ̂] = Λ A Λ + E(1/N) (Λ Aᵀ Λ + tr(AΛ) Λ) `[D, D]`.

    Given N, E[Λ̂ A Λ̂] = (1 − 1/N) Λ A Λ + (1/N) E[x xᵀ A x xᵀ] (the N(N−1) cross terms are
    independent pairs); averaging over N replaces 1/N by `inv_n`. For A = I this is E(Λ̂²) of Zhang
    et al. 2025, Eq. 30 (Eq. 31 for a fixed N); for general A, Mainali et al. spec (M1).
    """
    lam = _square("cov", cov)
    a = _square("a", a, lam.shape[0])
    c = float(inv_n)
    return (1.0 - c) * lam @ a @ lam + c * gaussian_fourth_moment(lam, a)


def beta_second_moment(cov: ArrayLike, w_second: ArrayLike, noise: float,
                       inv_n: float) -> np.ndarray:
    """B = E ββᵀ `[D, D]` for β = (1/N) Σ_n y_n x_n, y_n = wᵀx_n + ε_n (docs/theory.md):
    B = E[Λ̂ S Λ̂] + σ² E(1/N) Λ = A + c (A + tr(SΛ) Λ) + σ² c Λ, A = Λ S Λ, c = E(1/N).

    Args:
        cov: Λ `[D, D]`. w_second: S = E w wᵀ `[D, D]` (symmetric). noise: σ². inv_n: E(1/N).
    """
    lam = _square("cov", cov)
    return wishart_second_moment(lam, w_second, inv_n) + float(noise) * float(inv_n) * lam


def cov_hat_sq_eigenvalues(eigvals: ArrayLike, inv_n: float) -> np.ndarray:
    """Eigenvalues a_d of E(Λ̂²) from those of Λ: a_d = λ_d² (1 + (1 + tr Λ/λ_d) E(1/N)) `[D]`
    (Zhang et al. 2025, Eq. 32). E(Λ̂²) shares Λ's eigenvectors, in the order of `eigvals`."""
    lam = np.asarray(eigvals, dtype=np.float64)
    return lam**2 + float(inv_n) * (lam + lam.sum()) * lam
