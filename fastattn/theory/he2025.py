"""Closed-form theory of He, Pan, Chen & Yang (ICML 2025), "In-Context Linear Regression Demystified:
Training Dynamics and Mechanistic Interpretability of Multi-Head Softmax Attention" (arXiv 2503.12734).

Setting (spec §2.1): x ~ N(0, I_d), β ~ N(0, I_d/d), labels with noise σ² on the context and the
query, L context examples; losses are E(y_q − ŷ_q)² with the σ² floor included (no ½). Every function
takes plain numbers or numpy arrays; section numbers refer to ../shared/specs/he2025.md.

Errata handled here (spec §9.4): Theorem 1's set S̄ is read with "∃γ > 0" and "min{|H+|, |H−|} ≥ 1"
(the text prints "∀γ > 0" and "> 1", which would exclude the two-head model the text discusses).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "approx_grad",
    "approx_loss",
    "bayes_risk",
    "bayes_risk_limit",
    "dgd_limit",
    "eta_gd_opt",
    "eta_star",
    "linear_attention_length_risk",
    "manifold_point",
    "mu_gamma",
    "optimal_preconditioner",
    "reduced_loss",
    "reduced_moments",
    "risk_dgd",
    "risk_gd",
    "risk_linear",
    "single_head_nw",
    "softmax_norm_prediction",
    "theorem1_bound",
]


# --------------------------------------------------------------------- §5.1 exact finite-L risks
def eta_star(d: int, L: float, sigma2: float) -> float:
    """η* = 1 / (1 + (1 + σ²) d/L): Theorem 1's step, exactly the risk-optimal dGD step at finite L."""
    return 1.0 / (1.0 + (1.0 + sigma2) * d / L)


def eta_gd_opt(d: int, L: float, sigma2: float) -> float:
    """The risk-optimal vanilla-GD step 1 / (1 + (d + 1 + σ² d)/L)."""
    return 1.0 / (1.0 + (d + 1 + sigma2 * d) / L)


def risk_gd(eta: ArrayLike, d: int, L: float, sigma2: float) -> np.ndarray:
    """R_GD(η) = 1 + σ² − 2η + η² (1 + (d + 1 + σ² d)/L): the risk of ŷ = (η/L) Σ_ℓ y_ℓ x_ℓᵀ x_q
    (uses E tr((XᵀX)²) = dL(L + d + 1))."""
    eta = np.asarray(eta, dtype=np.float64)
    return 1 + sigma2 - 2 * eta + eta ** 2 * (1 + (d + 1 + sigma2 * d) / L)


def risk_dgd(eta: ArrayLike, d: int, L: float, sigma2: float) -> np.ndarray:
    """R_dGD(η) = 1 + σ² − 2η (L−1)/L + η² (L−1)(L + d + σ² d)/L²: the risk of debiased GD,
    ŷ = (η/L) Σ_ℓ y_ℓ (x_ℓ − x̄)ᵀ x_q (XᵀPX ~ Wishart(d, L−1) for the centring projector P)."""
    eta = np.asarray(eta, dtype=np.float64)
    return 1 + sigma2 - 2 * eta * (L - 1) / L + eta ** 2 * (L - 1) * (L + d + sigma2 * d) / L ** 2


def dgd_limit(xi: float, sigma2: float) -> float:
    """lim R_dGD(η*) = lim R_GD(η*) = 1 + σ² − η*(ξ), η*(ξ) = 1/(1 + (1 + σ²)ξ), as L → ∞ with
    d/L → ξ (§5.4)."""
    return 1.0 + sigma2 - 1.0 / (1.0 + (1.0 + sigma2) * xi)


def bayes_risk_limit(xi: float, sigma2: float) -> float:
    """The Bayes risk as L → ∞, d/L → ξ (Marchenko–Pastur, §5.4):
    ½ [σ² + (ξ−1)/ξ + √(4σ² + (σ² + (1−ξ)/ξ)²)]."""
    return 0.5 * (sigma2 + (xi - 1) / xi + math.sqrt(4 * sigma2 + (sigma2 + (1 - xi) / xi) ** 2))


def bayes_risk(d: int, L: int, sigma2: float, n: int = 20_000, seed: int = 0
               ) -> tuple[float, float]:
    """Finite-L Bayes risk σ² + σ² E tr((XᵀX + σ² d I)⁻¹) (the ridge λ = σ² d posterior mean), by
    Monte Carlo over the Wishart eigenvalues: (mean, standard error), `n` draws of X."""
    rng = np.random.default_rng(seed)
    vals = np.concatenate([
        np.linalg.eigvalsh(np.einsum("nld,nle->nde", x, x))
        for x in (rng.standard_normal((m, L, d)) for m in _chunks(n, 2000))])
    per = sigma2 + sigma2 * (1.0 / (vals + sigma2 * d)).sum(-1)
    return float(per.mean()), float(per.std(ddof=1) / math.sqrt(n))


def theorem1_bound(xi: float, sigma2: float) -> float:
    """Theorem 1's bound on lim R_dGD(η*) / BayesRisk: 1 + σ⁻² {(1 + ξσ²)(1 + σ² + ξ⁻¹)}⁻¹.

    Stated for σ² > 0 and σ² + 1/ξ > 1 (ValueError otherwise)."""
    if sigma2 <= 0 or xi <= 0 or sigma2 + 1 / xi <= 1:
        raise ValueError(f"theorem1_bound needs sigma2 > 0, xi > 0 and sigma2 + 1/xi > 1; got "
                         f"sigma2={sigma2}, xi={xi}")
    return 1.0 + 1.0 / (sigma2 * (1 + xi * sigma2) * (1 + sigma2 + 1 / xi))


def single_head_nw(d: int, L: float, sigma2: float) -> tuple[float, float]:
    """(ω, μ) of the single-head reference predictor the repo compares with (§1.6, Chen et al.
    2024a): ω = 1/√d, μ = √d / (1 + (1 + σ²)(d/L) e)."""
    return 1 / math.sqrt(d), math.sqrt(d) / (1 + (1 + sigma2) * d / L * math.e)


def risk_linear(gamma: ArrayLike, L: int, sigma2: float, cov: ArrayLike | None = None,
                prior: ArrayLike | None = None, debiased: bool = True,
                query_noise: bool = True) -> float:
    """Exact risk of the linear predictor ŷ = (1/L) Σ_ℓ y_ℓ x̃_ℓᵀ Γ x_q, x̃_ℓ = x_ℓ − x̄ (debiased)
    or x_ℓ, for x ~ N(0, Σ), y = βᵀx + ε, β ~ N(0, V), noise σ² (on y_q too unless `query_noise`
    is False). With W = Σ_ℓ x̃_ℓ x̃_ℓᵀ ~ Wishart(Σ, n), n = L − 1 (debiased) or L, and
    E[W A W] = n(n+1) ΣAΣ + n tr(AΣ) Σ:

        R = σ²_q + tr(ΣV) − (2n/L) tr(ΣGΣV) + (n/L²)[(n+1) tr(ΣGΣVΣGᵀ) + (tr(VΣ) + σ²) tr(ΣGΣGᵀ)],

    G = Γᵀ.

    Γ = ηI, Σ = I, V = I/d gives R_dGD / R_GD (§5.1); Γ_n = η diag(1_{S_n}), V = diag(1_{S_n})/d
    a multi-task predictor (§5.8); a dense Γ the preconditioned dGD (§5.6). `gamma`, `cov`,
    `prior` `[d, d]` (cov, prior default I and I/d)."""
    # ŷ = (1/L) x_qᵀ Γᵀ X̃ᵀy: the derivation above is written for the map G = Γᵀ
    g = np.atleast_2d(np.asarray(gamma, dtype=np.float64)).T
    d = g.shape[0]
    s = np.eye(d) if cov is None else np.asarray(cov, dtype=np.float64)
    v = np.eye(d) / d if prior is None else np.asarray(prior, dtype=np.float64)
    n = L - 1 if debiased else L
    sv = np.trace(s @ v)
    sgsg = np.trace(s @ g @ s @ g.T)
    return float(sigma2 * query_noise + sv - 2 * n / L * np.trace(s @ g @ s @ v)
                 + n / L ** 2 * ((n + 1) * np.trace(s @ g @ s @ v @ s @ g.T) + (sv + sigma2) * sgsg))


def optimal_preconditioner(cov: ArrayLike, L: int, sigma2: float, prior_var: float,
                           debiased: bool = True) -> np.ndarray:
    """The Γ `[d, d]` minimising `risk_linear` for β ~ N(0, v I): setting its gradient to zero gives
    Γ* = L v ((n+1) v Σ + (v tr Σ + σ²) I)⁻¹ (n = L − 1 debiased, L vanilla), which tends to
    Σ⁻¹ (up to scale) as L grows: the preconditioner of spec §5.6. Σ = I, v = 1/d: Γ* = η* I."""
    s = np.asarray(cov, dtype=np.float64)
    n = L - 1 if debiased else L
    v = float(prior_var)
    return L * v * np.linalg.inv((n + 1) * v * s + (v * np.trace(s) + sigma2) * np.eye(len(s)))


def linear_attention_length_risk(eta_train: ArrayLike, L: ArrayLike, L_train: int, d: int,
                                 sigma2: float) -> np.ndarray:
    """Risk of LinTF trained to one GD step η_train at L_train (its 1/L fixed to 1/L_train) and
    tested at L: vanilla GD with η = η_train L/L_train, R_GD(η, L) (spec §5.7)."""
    L = np.asarray(L, dtype=np.float64)
    return risk_gd(np.asarray(eta_train) * L / L_train, d, L, sigma2)


def softmax_norm_prediction(scale: float, d: int, L: ArrayLike) -> np.ndarray:
    """‖smax(s X x_q)‖₂ ≈ √(e^{d s²}/L) for x ~ N(0, I_d) (spec §5.2, E9): the large-L value
    behind the approximate loss's (1+σ²)/L · exp(d ωωᵀ) term."""
    return np.sqrt(np.exp(d * scale ** 2) / np.asarray(L, dtype=np.float64))


# ------------------------------------------------------------------ §5.2 approximate loss L̃(ω, μ)
def approx_loss(omega: ArrayLike, mu: ArrayLike, d: int, L: float, sigma2: float) -> float:
    """L̃(ω, μ) = 1 + σ² − 2 μᵀω + μᵀ(ωωᵀ + (1+σ²)/L · exp(d ωωᵀ)) μ, exp entry-wise (§5.2)."""
    w, m = np.asarray(omega, float), np.asarray(mu, float)
    c = (1 + sigma2) / L
    return float(1 + sigma2 - 2 * m @ w + (m @ w) ** 2 + c * m @ np.exp(d * np.outer(w, w)) @ m)


def approx_grad(omega: ArrayLike, mu: ArrayLike, d: int, L: float, sigma2: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """(∇_ω L̃, ∇_μ L̃), each `[H]` (§5.2):
    ∇_μ = −2ω + 2⟨μ,ω⟩ω + 2c E μ,  ∇_ω = −2μ + 2⟨μ,ω⟩μ + 2cd μ ⊙ (E (μ ⊙ ω)),  E = exp(d ωωᵀ)."""
    w, m = np.asarray(omega, float), np.asarray(mu, float)
    c = (1 + sigma2) / L
    e = np.exp(d * np.outer(w, w))
    mw = m @ w
    return -2 * m + 2 * mw * m + 2 * c * d * m * (e @ (m * w)), -2 * w + 2 * mw * w + 2 * c * e @ m


def mu_gamma(gamma: ArrayLike, d: int, L: float, sigma2: float) -> np.ndarray:
    """μ_γ = (γ/2) / (γ² + (1+σ²)/L · sinh(d γ²)): the OV mass Σ_{H+} μ_h on the manifold S_γ
    (§5.2); 2γμ_γ → η* as γ → 0⁺."""
    g = np.asarray(gamma, dtype=np.float64)
    return (g / 2) / (g ** 2 + (1 + sigma2) / L * np.sinh(d * g ** 2))


def manifold_point(gamma: float, signs: ArrayLike, d: int, L: float, sigma2: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """A point of S_γ: ω_h = γ sign_h and μ_γ spread evenly over the heads of each sign.
    `signs` `[H]` of ±1, at least one of each (Theorem 1's S̄ read with ≥ 1, §9.4)."""
    s = np.asarray(signs, dtype=np.float64)
    n_pos, n_neg = int((s > 0).sum()), int((s < 0).sum())
    if n_pos < 1 or n_neg < 1 or n_pos + n_neg != len(s):
        raise ValueError(f"signs must be ±1 with at least one of each; got {signs!r}")
    m = float(mu_gamma(gamma, d, L, sigma2))
    return gamma * s, np.where(s > 0, m / n_pos, -m / n_neg)


# --------------------------------------------------- §5.1 true population loss of the reduced model
def reduced_moments(omega: ArrayLike, d: int, L: int, sigma2: float, n: int = 100_000,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(a `[H]`, B `[H, H]`) with ℒ(ω, μ) = 1 + σ² − 2μᵀa + μᵀBμ exactly (§5.1, spec K3):

        a_h = (1/d) E[r Σ_ℓ p_hℓ u_ℓ],
        B_hk = (1/d) E[(Σ_ℓ p_hℓ u_ℓ)(Σ_ℓ p_kℓ u_ℓ)] + ((d−1)/d + σ²) E[p_h · p_k],
        p_h = softmax(ω_h r u), u ~ N(0, I_L), r = ‖x_q‖ ~ χ_d,

    estimated from `n` antithetic pairs (u, −u) in float64. The error is Monte Carlo only (no bias
    measurable against a long Monte Carlo of the model); its standard deviation over seeds on ℒ is
    ≈ 2.2e-3 · (1e5/n)^½ near the trained point (d = 5, L = 40, σ² = 0.1, ω = ±0.13, μ = ±3.39;
    measured in docs/he2025.md), no smaller than plain Monte Carlo of the model's risk with as many
    prompts."""
    w = np.asarray(omega, dtype=np.float64)
    a = np.zeros(len(w))
    b = np.zeros((len(w), len(w)))
    rng = np.random.default_rng(seed)
    for m in _chunks(n, 5000):
        u = rng.standard_normal((m, L))
        r = np.sqrt(rng.chisquare(d, m))
        for sign in (1.0, -1.0):
            uu = sign * u
            logits = w[None, :, None] * (r[:, None, None] * uu[:, None, :])      # [m, H, L]
            p = np.exp(logits - logits.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            pu = np.einsum("mhl,ml->mh", p, uu)
            a += (r[:, None] * pu).sum(0) / d
            b += (np.einsum("mh,mk->hk", pu, pu) / d
                  + ((d - 1) / d + sigma2) * np.einsum("mhl,mkl->hk", p, p))
    return a / (2 * n), b / (2 * n)


def reduced_loss(omega: ArrayLike, mu: ArrayLike | None, d: int, L: int, sigma2: float,
                 n: int = 100_000, seed: int = 0) -> tuple[float, np.ndarray]:
    """(ℒ(ω, μ), μ) of the reduced model by `reduced_moments`; with mu=None, μ = μ*(ω) = B⁻¹a and
    ℒ = min_μ ℒ(ω, μ) = 1 + σ² − aᵀB⁻¹a."""
    a, b = reduced_moments(omega, d, L, sigma2, n, seed)
    m = np.linalg.solve(b, a) if mu is None else np.asarray(mu, dtype=np.float64)
    return float(1 + sigma2 - 2 * m @ a + m @ b @ m), m


def _chunks(n: int, size: int) -> list[int]:
    return [size] * (n // size) + ([n % size] if n % size else [])


# ------------------------------------------------------------------------- §5.8 multi-task risks
def multitask_risk(gammas: ArrayLike, support_mask: ArrayLike, L: int, sigma2: float,
                   prior_var: float, debiased: bool = True, query_noise: bool = True) -> np.ndarray:
    """Per-task exact risks `[N]` of ŷ_n = (1/L) Σ_ℓ y_ℓn x̃_ℓᵀ Γ_n x_q (`MultiTaskGD`), x ~ N(0, I),
    y_n = β_{S_n}ᵀ x_{S_n} + ε_n, β ~ N(0, v I): `risk_linear` with V_n = v diag(1_{S_n}) (task n's
    predictor reads y_n only, so sharing β across tasks does not change it). `gammas` `[N, d, d]`,
    `support_mask` `[N, d]`."""
    m = np.asarray(support_mask, dtype=np.float64)
    return np.array([risk_linear(g, L, sigma2, prior=prior_var * np.diag(row), debiased=debiased,
                                 query_noise=query_noise)
                     for g, row in zip(np.asarray(gammas, float), m, strict=True)])


def best_combination(patterns: ArrayLike, risk: callable) -> tuple[np.ndarray, float]:
    """(c, risk(Σ_j c_j P_j)) minimising a risk that is quadratic in its argument, over the span of
    `patterns` `[J, ...]`: the quadratic's coefficients come from its values at 0, e_j and
    e_j + e_k (exact for a quadratic), then one linear solve."""
    p = np.asarray(patterns, dtype=np.float64)
    r0 = risk(np.zeros_like(p[0]))
    single = np.array([risk(q) for q in p])
    pair = np.array([[risk(a + b) for b in p] for a in p])
    quad = (pair - single[:, None] - single[None, :] + r0) / 2          # B_jk = ½ ∂²R
    lin = single - r0 - np.diag(quad)                                     # −2 a_j
    c = np.linalg.solve(2 * quad, -lin)
    return c, float(risk(np.einsum("j,j...->...", c, p)))
