"""Theory of Musat et al. 2025, "On the Emergence of Induction Heads for In-Context Learning"
(arXiv 2511.01033): the 3-parameter model (α₃, β₂, γ₃) of Theorem 2, its emergence times by exact
gradient flow, Theorem 2's bounds and the sharper asymptotics of spec §7.6 / §11.4.

Conventions (the paper's, spec §4 and §7): the loss is ‖y − ỹ‖² summed over the output
coordinates (1 at zero weights, orthonormal data); time is gradient-flow time at unit learning
rate, θ̇ = −∂L/∂θ. The library's integrators follow dθ/dt = −½ ∂L/∂θ, so every time here is half
the integrators' time (`PAPER_TIME_PER_CORE_TIME`), and a GD step with learning rate η advances the
paper's time by η. Emergence (Def. 1–3): T_x = inf{t : x(t) ≥ threshold}; t_ICL = inf{t : all three
≥ their thresholds}. Note that t_ICL is **not** the loss drop: at t_ICL the loss is still on its
plateau 1 − 1/(2N); it falls below ½ only at ≈ 1.46 t_ICL (q = N).

Pure formulas: the emergence times by exact flow (`emergence_times`, `gram19_emergence_times`,
`emergence_steps_gd`) integrate the induction objectives and live in `fastattn.population.emergence`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "PAPER_TIME_PER_CORE_TIME",
    "asymptotic_times",
    "loss_collapse_time",
    "plateau_loss",
    "theorem2_bounds",
    "three_param_loss",
    "three_param_rhs",
    "uniform_query_t_icl",
]

PAPER_TIME_PER_CORE_TIME = 0.5
SQRT_2PI = math.sqrt(2.0 * math.pi)


# --------------------------------------------------------------------------------------------
# closed forms of the 3-parameter model (q = N, strict mask)
def three_param_loss(alpha, beta, gamma, N):
    """The loss of spec §7.3 in the paper's (unstable) form: s = exp(β e^α / (e^α + 2N − 2)),
    L = γ² (s² + F)/(s + F)² − 2γ s/(s + F) + 1, F = 2N − 1. Arrays broadcast."""
    a, b, g = (np.asarray(x, dtype=np.float64) for x in (alpha, beta, gamma))
    F = 2.0 * N - 1.0
    s = np.exp(b * np.exp(a) / (np.exp(a) + 2.0 * N - 2.0))
    return g**2 * (s**2 + F) / (s + F) ** 2 - 2.0 * g * s / (s + F) + 1.0


def three_param_rhs(alpha, beta, gamma, N):
    """(α̇, β̇, γ̇) = −∇L of the paper's gradient-flow ODE (spec §7.3, B.5), as printed."""
    a, b, g = (np.asarray(x, dtype=np.float64) for x in (alpha, beta, gamma))
    F = 2.0 * N - 1.0
    G = np.exp(a) + 2.0 * N - 2.0
    s = np.exp(b * np.exp(a) / G)
    common = g / (s + F) ** 2 - g**2 * (s - 1.0) / (s + F) ** 3
    beta_dot = 2.0 * F * s * np.exp(a) / G * common
    alpha_dot = 2.0 * b * (2.0 * N - 2.0) * F * s * np.exp(a) / G**2 * common
    gamma_dot = 2.0 * s / (s + F) - 2.0 * g * (s**2 + F) / (s + F) ** 2
    return alpha_dot, beta_dot, gamma_dot


def plateau_loss(N):
    """The loss on the plateau after γ emerged (γ = 1, s = 1): 1 − 1/(2N)."""
    return 1.0 - 0.5 / np.asarray(N, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# bounds and asymptotics
def theorem2_bounds(N) -> dict[str, tuple[float, float]]:
    """Leading-order bounds of Theorem 2's proof (App. B.6–B.8), as (lower, upper) intervals.

    Phase 1: 1/(2N) ≤ γ̇ ≤ 1/N while α, β, γ < ½, so T_γ = T₁ ∈ [N/2, N].
    Phase 2 (γ ∈ [½, 3/2], α, β ≤ ½): β̇ = 2γe^α/(4N²) ∈ [1/(4N²), 3√e/(4N²)] (our reading of
    B.7.2, which states Θ(1/N²) only), so T₂ ∈ [2N²/(3√e), 2N²].
    Phase 3: α̇ > 1/(8N²), so T₃ < 4N²; β stays below ½ + 3√e < 20 there.
    Returns T1, T2, T3 and the totals T_gamma = T1, T_beta = T1 + T2, T_alpha = T1 + T2 + T3
    (the paper's App. B.1 mislabels these totals).
    """
    N = float(N)
    T1 = (N / 2.0, N)
    T2 = (2.0 * N**2 / (3.0 * math.sqrt(math.e)), 2.0 * N**2)
    T3 = (0.0, 4.0 * N**2)
    return {
        "T1": T1, "T2": T2, "T3": T3,
        "T_gamma": T1,
        "T_beta": (T1[0] + T2[0], T1[1] + T2[1]),
        "T_alpha": (T1[0] + T2[0], T1[1] + T2[1] + T3[1]),
        "beta_at_T_alpha_max": (0.0, 0.5 + 3.0 * math.sqrt(math.e)),
    }


# next-order coefficients fitted for N ≥ 512 (spec §7.6), thresholds ½ only
_SECOND_ORDER = {"T_beta": 0.790, "T_alpha": 0.682}


def asymptotic_times(N, thresholds=(0.5, 0.5, 0.5), two_term: bool = True) -> dict[str, float]:
    """Large-N emergence times (spec §7.6): γ ≈ 1 − e^{−t/N}, α = β²/2, dβ/dτ = e^{β²/2}, τ = t/(2N²):
    T_γ ≈ −N ln(1 − θ_γ), T_β ≈ √(2π) erf(θ_β/√2) N², T_α ≈ √(2π) erf(√θ_α) N².

    thresholds = (θ_γ, θ_β, θ_α). two_term adds the fitted O(N) terms (0.790 N, 0.682 N), known only
    for θ = ½. t_icl is the largest of the three.
    """
    tg, tb, ta = (float(x) for x in thresholds)
    if not (0 < tg < 1 and tb > 0 and ta > 0):
        raise ValueError(f"thresholds={thresholds!r}: need 0 < θ_γ < 1 and θ_β, θ_α > 0")
    N = float(N)
    out = {
        "T_gamma": -N * math.log1p(-tg),
        "T_beta": SQRT_2PI * math.erf(tb / math.sqrt(2.0)) * N**2,
        "T_alpha": SQRT_2PI * math.erf(math.sqrt(ta)) * N**2,
    }
    if two_term:
        for key, theta in (("T_beta", tb), ("T_alpha", ta)):
            if theta == 0.5:
                out[key] += _SECOND_ORDER[key] * N
    out["t_icl"] = max(out.values())
    return out


def loss_collapse_time(N):
    """Leading-order blow-up time of β (loss collapse, spec §7.6): √(2π) N²."""
    return SQRT_2PI * np.asarray(N, dtype=np.float64) ** 2


def uniform_query_t_icl(N):
    """Fit of t_ICL for q ~ Unif{1..N} (spec §11.4, within 0.3 % on N = 64..512): N²/(0.622 ln N + 0.143)."""
    N = np.asarray(N, dtype=np.float64)
    return N**2 / (0.622 * np.log(N) + 0.143)
