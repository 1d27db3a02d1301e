"""The exact population loss of the DIAG model (Eq. 6, Lemma 2) on positional contexts 𝒲(μ)
(spec §5.11: commuting diagonal W = diag(λ), λ_i = e^{iφ_i}, φ_i ~ U[0, 2π/μ) i.i.d., s_1 = 1_d).

Parseval does not apply under 𝒲(μ): the moments m(n) = E λⁿ = (e^{inα} − 1)/(inα), α = 2π/μ, of
the Toeplitz form enter instead. With C = BᵀA, p = P[T−2, :T] and a_t = t − T + 1 (the exponent of
λ_j in ⟨e_t|e_{T−1}⟩), the residual of coordinate i at context length T is

    r_i = Σ_t p_t Σ_j C_ij λ_j^{a_t} λ_i^{t−1} − λ_i^T,

and E|r_i|² splits by which of i, j, j' coincide. The loss depends on C only through C_ii,
q_i = Σ_{j≠i} C_ij² and S_i = Σ_{j≠i} C_ij:

    l_T = Σ_i [C_ii² k₁ + q_i k₂ + C_ii S_i k₃ + (S_i² − q_i) k₄ − 2 C_ii l₁ − 2 S_i l₂ + 1],

k_n = pᵀ M_n p and l_n = L_n · p with the real parts of (t, t' = 1..T)

    M₁ = m(2(t − t')),  M₂ = m(t − t')²,  M₄ = m(a_t) m(−a_t') m(t − t'),
    M₃ = m(2t − t' − T + 1) m(T − 1 − t') + m(a_t) m(t − 2t' + T − 1),
    L₁ = m(2t − 2T),  L₂ = m(a_t) m(t − T − 1).

At μ = 1 (m(n) = δ_n0) this is l_U (spec §5.6); at C = I it is the PE-only loss d (p − e_T)ᵀ H_T
(p − e_T) of Prop. 7. Cost O(T_max³ + T_max d²) per evaluation, in numpy (float64).

The form sums terms of size ‖C‖²‖p‖² that cancel at a minimum (ℓ = 0 at C = I, p = e_T): its
rounding floor is ≈ 1e-14 of those terms, and a sum below zero is reported as 0 (the gradient is
left as computed).
"""

from __future__ import annotations

import math

import numpy as np

from fastattn import configs as layout
from fastattn.population.legacy import DIAG_SLOTS, config_of
from fastattn.population.objectives import Objective


def moment(n: np.ndarray, mu: float) -> np.ndarray:
    """m(n) = E λⁿ for λ = e^{iφ}, φ ~ U[0, 2π/μ) (complex, elementwise over integer `n`)."""
    x = np.asarray(n, dtype=np.float64) * (2 * math.pi / mu)
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 1.0 + 0j, (np.exp(1j * x) - 1) / (1j * safe))


def row_forms(T: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """(M `[4, T, T]` = M₁..M₄, L `[2, T]` = L₁, L₂), real parts (module docstring)."""
    t = np.arange(1, T + 1)[:, None]
    u = np.arange(1, T + 1)[None, :]
    m = lambda n: moment(n, mu)  # noqa: E731
    a_t, a_u = t - T + 1, u - T + 1
    M = np.stack([m(2 * (t - u)), m(t - u) ** 2,
                  m(2 * t - u - T + 1) * m(T - 1 - u) + m(a_t) * m(t - 2 * u + T - 1),
                  m(a_t) * m(-a_u) * m(t - u)]).real
    s = np.arange(1, T + 1)
    L = np.stack([m(2 * s - 2 * T), m(s - T + 1) * m(s - T - 1)]).real
    return M, L


def loss_grad_cp(C: np.ndarray, P: np.ndarray, mu: float, forms: list | None = None
                 ) -> tuple[float, np.ndarray, np.ndarray]:
    """(ℓ, ∂ℓ/∂C `[d, d]`, ∂ℓ/∂P `[T_max, T_max]`) of ℓ = Σ_{T=2}^{T_max} l_T(C, P[T−2, :T]);
    `forms`: `row_forms(T, mu)` for T = 2..T_max, if precomputed."""
    C, P = np.asarray(C, dtype=np.float64), np.asarray(P, dtype=np.float64)
    d, tmax = C.shape[0], P.shape[0]
    forms = forms if forms is not None else [row_forms(T, mu) for T in range(2, tmax + 1)]
    diag = np.diag(C).copy()
    off = C - np.diag(diag)
    q, S = (off**2).sum(1), off.sum(1)
    wk = np.stack([diag**2, q, diag * S, S**2 - q]).sum(1)        # Σ_i of k₁..k₄'s coefficients
    wl = np.array([diag.sum(), S.sum()])
    loss, gC, gP = 0.0, np.zeros_like(C), np.zeros_like(P)
    for T, (M, L) in zip(range(2, tmax + 1), forms, strict=True):
        p = P[T - 2, :T]
        Mp = M @ p                                                 # [4, T]
        k, lin = Mp @ p, L @ p
        loss += float(wk @ k - 2 * wl @ lin + d)
        gP[T - 2, :T] = 2 * (wk @ Mp) - 2 * (wl @ L)
        gi = 2 * diag * k[0] + S * k[2] - 2 * lin[0]               # ∂/∂C_ii
        go = (2 * off * (k[1] - k[3]) + (diag * k[2] + 2 * S * k[3] - 2 * lin[1])[:, None])
        gC += np.diag(gi) + go * (1 - np.eye(d))
    return max(loss, 0.0), gC, gP


class PositionalDiagObjective(Objective):
    """ℓ(A, B, P) of the DIAG model `config` (an `ARDiagConfig`; a positional (d, H, T_max) is
    deprecated) on 𝒲(μ) (module docstring). Flat parameters: the card's layout, A `[H, d]`,
    B `[H, d]`, P `[T_max, T_max]`; C = BᵀA."""

    def __init__(self, config, mu: float):
        super().__init__()
        self.config = config_of("diag", config, DIAG_SLOTS, "PositionalDiagObjective(config, mu)")
        if self.config.kind != "diag":
            raise ValueError(f"config={config!r} is not DIAG's; pass an ARDiagConfig")
        if not mu >= 1:
            raise ValueError(f"mu must be at least 1 (𝒲(μ) has phases in [0, 2π/μ)); got {mu}")
        self.mu = float(mu)
        tmax = dict(layout.param_shapes(self.config))["P"][0]       # the card's P [T_max, T_max]
        self._forms = [row_forms(T, self.mu) for T in range(2, tmax + 1)]

    def __repr__(self) -> str:
        return f"PositionalDiagObjective({self.config!r}, mu={self.mu})"

    def size(self) -> int:
        return layout.n_params(self.config)

    def loss_grad(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        b = layout.unflatten(self.config, params)
        A, B, P = b["A"], b["B"], b["P"]
        loss, gC, gP = loss_grad_cp(B.T @ A, P, self.mu, self._forms)
        return loss, np.concatenate([(B @ gC).ravel(), (A @ gC.T).ravel(), gP.ravel()])
