"""Closed-form theory of Zhang, Singh, Latham & Saxe (ICML 2025), "Training Dynamics of In-Context
Learning in Linear Attention" (arXiv 2501.16265).

Conventions follow docs/conventions.md: the loss has no ½, the context average is 1/N, time obeys
τ dθ/dt = −½ ∂L/∂θ with τ = 1 by default, and eigenvalues are sorted **descending**
(λ_1 ≥ … ≥ λ_D, eigenvector e_d = column d of `eigvecs`). Every function takes plain numbers or
numpy arrays. Where the paper states a result for a fixed context length N, the argument
`inv_n` is E(1/N): pass 1/N for a fixed N, `expected_inv_n_uniform(N_max)` for the next-token loss
(Eqs. 24–26), and 0 for the N → ∞ limit.

Symbols: `a_d = λ_d² (1 + (1 + tr Λ/λ_d) inv_n)` is the d-th eigenvalue of B = E(Λ̂²) (Eq. 32), and
the population loss of a zero-block model ŷ = βᵀ Γ x_q is
L(Γ) = tr Λ − 2 tr(Γ Λ²) + tr(Γᵀ B Γ Λ) (spec §4.3).

Errata handled here (see spec §9): Eq. 71's printed integrand has v² where v⁵ is meant, and the
rank-R rule "m divides R" means "m is a multiple of R".
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from fastattn.theory.gaussian import cov_hat_sq_eigenvalues

__all__ = [
    "b_eigenvalues",
    "conspicuous_plateau_ms",
    "drop_coefficient",
    "drop_loss",
    "drop_ode_rhs",
    "drop_ode_solve",
    "drop_stable_value",
    "drop_time",
    "drop_trajectory",
    "expected_inv_n_uniform",
    "fixed_point_gamma",
    "fixed_point_loss",
    "fixed_point_losses",
    "merged_plateau_time",
    "minimum_loss",
    "n_conspicuous_plateaus",
    "optimal_gamma",
    "pcr_gamma",
    "plateau_duration",
    "separate_ansatz_weights",
    "white_merged_alpha_gamma",
    "white_merged_gamma",
    "white_merged_loss",
    "white_merged_s",
]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _eigvals(eigvals: ArrayLike) -> np.ndarray:
    """Validate eigenvalues `[D]`: 1-D, positive, sorted descending (conventions.md)."""
    lam = np.asarray(eigvals, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError(f"eigvals must be a non-empty 1-D array, got shape {lam.shape}")
    if np.any(lam <= 0):
        raise ValueError("eigvals must be strictly positive")
    if np.any(np.diff(lam) > 0):
        raise ValueError("eigvals must be sorted in descending order (docs/conventions.md)")
    return lam


def expected_inv_n_uniform(n_max: int) -> float:
    """E(1/N) for N uniform on {1, …, n_max}: H_{n_max} / n_max (App. A.3, text after Eq. 25).

    This is the only statistic of the next-token loss (Eq. 23) that enters the theory.
    For n_max = 31 it is 0.1299111…
    """
    if n_max < 1:
        raise ValueError("n_max must be >= 1")
    return float(sum(1.0 / n for n in range(1, n_max + 1)) / n_max)


def b_eigenvalues(eigvals: ArrayLike, inv_n: float) -> np.ndarray:
    """Eigenvalues a_d of B = E(Λ̂²) = Λ² + E(1/N)(Λ + tr Λ I)Λ (Eqs. 30–32).

    Args:
        eigvals: λ `[D]`, descending.
        inv_n: E(1/N).
    Returns:
        a `[D]` with a_d = λ_d² (1 + (1 + tr Λ/λ_d) inv_n).
    """
    return cov_hat_sq_eigenvalues(_eigvals(eigvals), inv_n)


def drop_coefficient(lam: float, trace: float, inv_n: float) -> float:
    """The coefficient a of the scalar ODE (Eq. 21): a = λ² (1 + (1 + tr Λ/λ) inv_n) (Eq. 32)."""
    return float(lam**2 * (1.0 + (1.0 + trace / lam) * inv_n))


# --------------------------------------------------------------------------------------------
# ATTN_M / 2-layer linear MLP: white covariance time course and plateau length
# --------------------------------------------------------------------------------------------


def white_merged_alpha_gamma(dim: int, inv_n: float, c: float = 1.0) -> tuple[float, float]:
    """α and γ of the white-covariance merged model for Λ = c·I_D (Eq. 50, spec §5.2 general c).

    E(z zᵀ) = α I_{D²} with α = c³ (1 + (1 + D) inv_n), and γ = ‖E(y_q z)‖ = ‖vec(Λ²)‖ = c² √D.
    For c = 1 these are Eq. 50.
    """
    alpha = c**3 * (1.0 + (1.0 + dim) * inv_n)
    gamma = c**2 * math.sqrt(dim)
    return float(alpha), float(gamma)


def white_merged_s(
    t: ArrayLike, s0: float, dim: int, inv_n: float, c: float = 1.0, tau: float = 1.0
) -> np.ndarray:
    """s(t) = ‖w_2(t)‖² of the merged model with Λ = c·I from balanced aligned vanishing init.

    Solution of τ ṡ = 2 s (γ − α s) (Eq. 48): s(t) = γ e^{2γt/τ} / (α (e^{2γt/τ} − 1) + γ/s(0))
    (Eq. 49), evaluated overflow-free as γ / (α (1 − e^{−2γt/τ}) + (γ/s0) e^{−2γt/τ}).

    Args:
        t: times `[T]` (or scalar), t ≥ 0.
        s0: s(0) = ‖w_2(0)‖² = w_init² (> 0).
        dim: D.
        inv_n: E(1/N).
        c: the white covariance scale, Λ = c I.
        tau: time constant τ.
    Returns:
        s(t), same shape as `t`.
    """
    alpha, gamma = white_merged_alpha_gamma(dim, inv_n, c)
    e = np.exp(-2.0 * gamma * np.asarray(t, dtype=np.float64) / tau)
    return gamma / (alpha * (1.0 - e) + (gamma / s0) * e)


def white_merged_gamma(
    t: ArrayLike, s0: float, dim: int, inv_n: float, c: float = 1.0, tau: float = 1.0
) -> np.ndarray:
    """σ(t): the merged model's effective matrix is Γ(t) = σ(t) I for Λ = c·I (Eq. 10, 49).

    σ(t) = s(t)/√D. For c = 1 and s0 = w_init² this is Eq. 10 exactly; σ(∞) = γ/(α√D) =
    1 / (c (1 + (1 + D) inv_n)).

    Returns:
        σ(t), same shape as `t`.
    """
    return white_merged_s(t, s0, dim, inv_n, c, tau) / math.sqrt(dim)


def white_merged_loss(
    t: ArrayLike, s0: float, dim: int, inv_n: float, c: float = 1.0, tau: float = 1.0
) -> np.ndarray:
    """Population loss L(t) of the white-covariance merged model (Eq. 51, general c).

    L = D c (1 − 2 c σ + c² (1 + (1 + D) inv_n) σ²), which is Eq. 51 for c = 1.

    Returns:
        L(t), same shape as `t`.
    """
    g = white_merged_gamma(t, s0, dim, inv_n, c, tau)
    return dim * c * (1.0 - 2.0 * c * g + c**2 * (1.0 + (1.0 + dim) * inv_n) * g**2)


def merged_plateau_time(eigvals: ArrayLike, s0: float, tau: float = 1.0) -> float:
    """Length of the merged model's (single) plateau from small init, general Λ (Eqs. 52–54).

    t_plateau ≈ τ/(2γ) ln(1/s(0)) with γ = ‖Λ²‖_F (Eq. 53). With s(0) = ‖w_2(0)‖² = w_init²
    this is Eq. 54, (τ/‖Λ²‖_F) ln(1/w_init).

    Args:
        eigvals: λ `[D]`, descending.
        s0: s(0) = ‖w_2(0)‖², the squared norm of the value-weight vector at init.
        tau: τ.
    """
    lam = _eigvals(eigvals)
    gamma = float(np.sqrt(np.sum(lam**4)))
    return float(tau / (2.0 * gamma) * math.log(1.0 / s0))


# --------------------------------------------------------------------------------------------
# fixed points, converged predictor, PCR
# --------------------------------------------------------------------------------------------


def fixed_point_loss(eigvals: ArrayLike, subset: Iterable[int], inv_n: float) -> float:
    """Loss at the ATTN_S fixed point M(S) for any index set S ⊆ {0..D−1} (Eqs. 19, 26, 63).

    L(M(S)) = tr Λ − Σ_{d∈S} λ_d (1 + (1 + tr Λ/λ_d) inv_n)⁻¹ = tr Λ − Σ_{d∈S} λ_d³/a_d.

    Args:
        eigvals: λ `[D]`, descending.
        subset: 0-based indices of the learned eigenvectors (distinct).
        inv_n: E(1/N) (1/N for a fixed N, Eq. 19; the next-token value for Eq. 26).
    """
    lam = _eigvals(eigvals)
    idx = np.asarray(sorted(set(int(i) for i in subset)), dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= lam.size):
        raise ValueError("subset indices out of range")
    tr = lam.sum()
    gains = lam / (1.0 + (1.0 + tr / lam) * inv_n)
    return float(tr - gains[idx].sum())


def fixed_point_losses(eigvals: ArrayLike, inv_n: float) -> np.ndarray:
    """Plateau levels L(M_0), …, L(M_D) visited from small init, M_m = M({1..m}) (Eq. 19/26).

    Returns:
        `[D+1]`; entry m is the loss after learning the m largest eigen-directions.
        L(M_0) = tr Λ and L(M_D) = `minimum_loss`.
    """
    lam = _eigvals(eigvals)
    tr = lam.sum()
    gains = lam / (1.0 + (1.0 + tr / lam) * inv_n)
    return tr - np.concatenate([[0.0], np.cumsum(gains)])


def fixed_point_gamma(
    eigvals: ArrayLike, eigvecs: ArrayLike, subset: Iterable[int], inv_n: float
) -> np.ndarray:
    """Γ at the fixed point M(S): Σ_{d∈S} λ_d⁻¹ (1 + (1 + tr Λ/λ_d) inv_n)⁻¹ e_d e_dᵀ (Eq. 18/59).

    Args:
        eigvals: λ `[D]`, descending.
        eigvecs: E `[D, D]`, column d is e_d.
        subset: 0-based indices of the learned eigenvectors.
        inv_n: E(1/N).
    Returns:
        Γ `[D, D]` (symmetric).
    """
    lam = _eigvals(eigvals)
    e = np.asarray(eigvecs, dtype=np.float64)
    tr = lam.sum()
    g = np.zeros_like(lam)
    idx = sorted(set(int(i) for i in subset))
    g[idx] = 1.0 / (lam[idx] * (1.0 + (1.0 + tr / lam[idx]) * inv_n))
    return (e * g) @ e.T


def pcr_gamma(eigvals: ArrayLike, eigvecs: ArrayLike, m: int, inv_n: float) -> np.ndarray:
    """Γ of in-context principal-component regression with m components (Eq. 22).

    The model at M_m predicts ŷ = βᵀ Γ x_q with
    Γ = Σ_{d≤m} λ_d⁻¹ (1 + (1 + tr Λ/λ_d) inv_n)⁻¹ e_d e_dᵀ.
    As inv_n → 0, Λ Γ → Σ_{d≤m} e_d e_dᵀ, so ŷ → wᵀ P_m x_q (PCR; β → Λ w).

    Returns:
        Γ `[D, D]`.
    """
    if not 0 <= m <= np.asarray(eigvals).size:
        raise ValueError("m must lie in 0..D")
    return fixed_point_gamma(eigvals, eigvecs, range(m), inv_n)


def optimal_gamma(eigvals: ArrayLike, eigvecs: ArrayLike, inv_n: float) -> np.ndarray:
    """Converged predictor Γ* = (Λ + inv_n (Λ + tr Λ I))⁻¹ = B⁻¹Λ (Eqs. 11, 25, 46).

    Returns:
        Γ* `[D, D]`.
    """
    lam = _eigvals(eigvals)
    return fixed_point_gamma(lam, eigvecs, range(lam.size), inv_n)


def minimum_loss(eigvals: ArrayLike, inv_n: float) -> float:
    """Global minimum L* = L(Γ*) = L(M_D) = tr Λ − Σ_d λ_d (1 + (1 + tr Λ/λ_d) inv_n)⁻¹.

    Eq. 19 (or 26) with m = D; the loss of `optimal_gamma` (Eq. 11).
    """
    return float(fixed_point_losses(eigvals, inv_n)[-1])


# --------------------------------------------------------------------------------------------
# ATTN_S: scalar dynamics of one drop (Eqs. 20, 21, 70, 71, 72, 76, 77)
# --------------------------------------------------------------------------------------------


def drop_ode_rhs(v: ArrayLike, lam: float, a: float, tau: float = 1.0) -> np.ndarray:
    """dv/dt of the scalar drop ODE τ v̇ = λ² v² − λ a v⁵ (Eq. 21 / 70 / 76).

    Args:
        v: value weight(s) of the head currently learning e_{m+1}.
        lam: λ_{m+1}.
        a: a_{m+1} (`drop_coefficient`).
    """
    v = np.asarray(v, dtype=np.float64)
    return (lam**2 * v**2 - lam * a * v**5) / tau


def drop_stable_value(lam: float, a: float) -> float:
    """Stable value v* = (λ/a)^{1/3} of Eq. 21 (= Eq. 20a's saturated value)."""
    return float((lam / a) ** (1.0 / 3.0))


def drop_ode_solve(
    t: ArrayLike, v0: float, lam: float, a: float, tau: float = 1.0, rtol: float = 1e-11
) -> np.ndarray:
    """Numerical solution v(t) of Eq. 21 from v(0) = v0 (scipy `solve_ivp`, DOP853).

    Args:
        t: increasing output times `[T]`, t ≥ 0.
    Returns:
        v `[T]`.
    """
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    sol = solve_ivp(
        lambda _s, y: drop_ode_rhs(y, lam, a, tau),
        (0.0, float(t[-1])),
        [v0],
        t_eval=t,
        method="DOP853",
        rtol=rtol,
        atol=1e-14,
    )
    if not sol.success:
        raise RuntimeError(sol.message)
    return sol.y[0]


def _antiderivative(v: np.ndarray, c: float) -> np.ndarray:
    """F(v) with F'(v) = 1/(v² − c v⁵) (Eq. 71, corrected integrand). Needs v > 0, v ≠ c^{-1/3}."""
    k = c ** (1.0 / 3.0)
    u = k * v
    return (k / 6.0) * (
        np.log(u * u + u + 1.0)
        - 2.0 * np.log(np.abs(1.0 - u))
        - 2.0 * math.sqrt(3.0) * np.arctan((2.0 * u + 1.0) / math.sqrt(3.0))
    ) - 1.0 / v


def drop_time(v: ArrayLike, v0: float, lam: float, a: float, tau: float = 1.0) -> np.ndarray:
    """Time for Eq. 21 to carry v from v0 to v: the closed form of Eq. 71 (corrected).

    (λ²/τ) t = F(v) − F(v0), F(v) = (c^{1/3}/6)[ln((u²+u+1)/(u−1)²) − 2√3 arctan((2u+1)/√3)] − 1/v,
    with c = a/λ and u = c^{1/3} v. The printed integrand 1/(v² − (a/λ)v²) is a typo for
    1/(v² − (a/λ)v⁵); the printed antiderivative is correct.

    Args:
        v: target value(s); must be > 0 and on the same side of v* as v0 (else returns nan).
        v0: initial value (> 0, ≠ v*).
    Returns:
        t, same shape as `v` (nan where v is unreachable from v0).
    """
    v = np.asarray(v, dtype=np.float64)
    c = a / lam
    vstar = c ** (-1.0 / 3.0)
    if v0 <= 0 or v0 == vstar:
        raise ValueError("v0 must be positive and different from the stable value")
    with np.errstate(divide="ignore", invalid="ignore"):
        t = tau / lam**2 * (_antiderivative(v, c) - _antiderivative(np.asarray(v0), c))
    below = v0 < vstar
    ok = (v > 0) & ((v < vstar) if below else (v > vstar))
    ok &= (v >= v0) if below else (v <= v0)
    return np.where(ok, t, np.nan)


def drop_trajectory(t: ArrayLike, v0: float, lam: float, a: float, tau: float = 1.0) -> np.ndarray:
    """v(t) of Eq. 21 by inverting the closed form Eq. 71 with bracketed root finding (brentq).

    Works for v0 on either side of v*; once v is within machine precision of v*, returns v*.

    Args:
        t: times `[T]` (or scalar), t ≥ 0.
    Returns:
        v(t), same shape as `t`.
    """
    tt = np.asarray(t, dtype=np.float64)
    vstar = drop_stable_value(lam, a)
    below = v0 < vstar
    # the point closest to v* that is still distinguishable from it in float64
    edge = vstar * (1.0 - 4e-16) if below else vstar * (1.0 + 4e-16)
    t_edge = float(drop_time(edge, v0, lam, a, tau))
    out = np.empty(tt.shape, dtype=np.float64)
    flat_t, flat_o = tt.reshape(-1), out.reshape(-1)
    for i, ti in enumerate(flat_t):
        if ti < 0:
            raise ValueError("t must be >= 0")
        if ti == 0.0:
            flat_o[i] = v0
        elif not ti < t_edge:
            flat_o[i] = vstar
        else:
            lo, hi = (v0, edge) if below else (edge, v0)
            flat_o[i] = brentq(
                lambda x, ti=ti: float(drop_time(x, v0, lam, a, tau)) - ti,
                lo,
                hi,
                xtol=1e-300,
                rtol=8.9e-16,
                maxiter=500,
            )
    return out


def drop_loss(v: ArrayLike, level: float, lam: float, a: float) -> np.ndarray:
    """Loss along the ansatz (Eq. 20) during the (m+1)-th plateau and drop.

    L = L(M_m) − 2 λ² v³ + λ a v⁶, from L = Σ_d λ_d (1 − 2 λ_d g_d + a_d g_d²) with g_{m+1} = v³.
    At v = v* it equals L(M_{m+1}).

    Args:
        v: value weight(s) of head m+1.
        level: L(M_m).
        lam, a: λ_{m+1}, a_{m+1}.
    """
    v = np.asarray(v, dtype=np.float64)
    return level - 2.0 * lam**2 * v**3 + lam * a * v**6


def plateau_duration(lam: float, v_start: float, tau: float = 1.0) -> float:
    """Plateau length τ/(λ² v) of ATTN_S (Eq. 72 with v = v_1(0); Eq. 77 with v = v_{m+1}(t_m)).

    Args:
        lam: λ_{m+1}.
        v_start: the value weight of the escaping head at the start of the plateau.
    """
    return float(tau / (lam**2 * v_start))


def separate_ansatz_weights(
    eigvals: ArrayLike,
    eigvecs: ArrayLike,
    m: int,
    inv_n: float,
    v_next: float = 0.0,
    n_heads: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-1 ATTN_S weights of the ansatz Eq. 20 during the (m+1)-th plateau.

    Heads i < m: k_i = q_i = v_i e_i with v_i = (λ_i/a_i)^{1/3} (Eq. 20a); head m (if m < D):
    k = q = v_next e_m (Eq. 20b); the remaining heads are zero (Eq. 20c). Indices are 0-based.
    With v_next = 0 the weights lie in M_m; with v_next = v* they lie in M_{m+1}.

    Args:
        eigvals: λ `[D]`, descending.
        eigvecs: E `[D, D]`, column d is e_d.
        m: number of learned directions, 0 ≤ m ≤ D.
        inv_n: E(1/N).
        v_next: the value weight of the escaping head.
        n_heads: H ≥ D (default D).
    Returns:
        v `[H]`, K `[H, 1, D]`, Q `[H, 1, D]` (the layout of `SeparateKQ`, rank R = 1).
    """
    lam = _eigvals(eigvals)
    e = np.asarray(eigvecs, dtype=np.float64)
    dim = lam.size
    h = dim if n_heads is None else int(n_heads)
    if h < dim:
        raise ValueError("n_heads must be >= D")
    if not 0 <= m <= dim:
        raise ValueError("m must lie in 0..D")
    a = b_eigenvalues(lam, inv_n)
    v = np.zeros(h)
    v[:m] = (lam[:m] / a[:m]) ** (1.0 / 3.0)
    if m < dim:
        v[m] = v_next
    k = np.zeros((h, 1, dim))
    n_set = min(m + 1, dim)
    k[:n_set, 0, :] = v[:n_set, None] * e[:, :n_set].T
    return v, k, k.copy()


# --------------------------------------------------------------------------------------------
# rank-R rule (§5, App. F.4)
# --------------------------------------------------------------------------------------------


def conspicuous_plateau_ms(dim: int, rank: int) -> list[int]:
    """The m whose plateau at L(M_m) is conspicuous with rank-R key/query: m = 0, R, 2R, … < D.

    §5 says "m that divides R"; the examples (R = 2: m = 0, 2, 4, 6; R = 4: m = 0, 4) show the
    intended rule is that m is a multiple of R. The converged level L(M_D) is not a plateau.
    """
    if rank < 1 or dim < 1:
        raise ValueError("dim and rank must be >= 1")
    return list(range(0, dim, rank))


def n_conspicuous_plateaus(dim: int, rank: int) -> int:
    """Expected number of conspicuous plateaus, ⌈D/R⌉ (§5, App. F.4)."""
    return len(conspicuous_plateau_ms(dim, rank))
