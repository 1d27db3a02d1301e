"""Mainali & Teixeira 2025, "Exact learning dynamics of in-context learning in linear transformers":
the paper's approximate per-mode theory (Eqs. 9–14, A91, A114–A116) beside the exact population
dynamics of the aligned model (spec §6.3–6.5, docs/mainali2025.md).

Time is in epochs t (one epoch = P per-task updates; the ODE rate is ηP, `eta_p`). Everything is
float64 numpy; `s` is the input spectrum `[d]`, `n` the context length N.

Paper (the diagonal-Ŝ approximation):
    s^∞_α = ((N+1) s_α + Tr S)/N, a^∞_α = 1/s^∞_α, τ_α = 1/(ηP s_α²),
    a_α(t) = a^∞ a⁰ / (a⁰ + (a^∞ − a⁰) e^{−2t/τ}), t_half = (τ/2) ln((a^∞ − a⁰)/a⁰),
    L(t) = ½ Σ_α s_α (s_α a_α²/a^∞_α − 2 s_α a_α + 1).
Exact (full Wishart coupling): the optimum of `WishartAlignedObjective`'s flow (`exact_optimum`)
and the saddle escape rates `escape_rate`; the flow itself is integrated by
`fastattn.population.aligned_flow.exact_flow`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


def _spectrum(s: ArrayLike) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    if s.ndim != 1 or s.size == 0 or np.any(s <= 0) or not np.all(np.isfinite(s)):
        raise ValueError(f"s must be a non-empty vector of positive eigenvalues; got {s!r}")
    return s


# ------------------------------------------------------------------------------ the paper
@dataclass(frozen=True)
class PaperTheory:
    """The paper's closed form at one (s, N, ηP, a⁰). Arrays are `[d]`.

    Attributes: s_inf (s^∞), a_inf (a^∞ = 1/s^∞), tau (τ, epochs), t_half (epochs; equals the
    paper's t*_α when a⁰ = ε), loss_0 (L at a⁰), loss_inf (Eq. A114).
    """

    s: np.ndarray
    n: float
    eta_p: float
    a0: np.ndarray
    s_inf: np.ndarray
    a_inf: np.ndarray
    tau: np.ndarray
    t_half: np.ndarray
    loss_0: float
    loss_inf: float

    def a(self, t: ArrayLike) -> np.ndarray:
        """a_α(t) `[T, d]` (Eq. 13 / A91, symmetric init p = q)."""
        t = np.asarray(t, dtype=np.float64)[:, None]
        return self.a_inf * self.a0 / (self.a0 + (self.a_inf - self.a0) * np.exp(-2 * t / self.tau))

    def loss(self, t: ArrayLike) -> np.ndarray:
        """L(t) `[T]` (Eq. 14)."""
        return paper_loss(self.a(t), self.s, self.n)

    def t_star(self) -> np.ndarray:
        """The paper's stage time t*_α = ln(1/(s^∞_α ε))/(2ηP s_α²) with ε = a⁰ `[d]`."""
        return np.log(1 / (self.s_inf * self.a0)) / (2 * self.eta_p * self.s**2)

    def time_to_fraction(self, frac: float) -> np.ndarray:
        """The time at which a_α reaches frac·a^∞_α `[d]` (frac ∈ (a⁰/a^∞, 1))."""
        return self.tau / 2 * np.log((self.a_inf - self.a0) * frac / (self.a0 * (1 - frac)))


def paper_theory(s: ArrayLike, n: float, eta_p: float, a0: ArrayLike | float) -> PaperTheory:
    """The paper's per-mode closed form (Eqs. 9–14, A114) for symmetric init a_α(0) = a0."""
    s = _spectrum(s)
    a0 = np.broadcast_to(np.asarray(a0, dtype=np.float64), s.shape).copy()
    s_inf = (n + 1) / n * s + s.sum() / n
    a_inf = 1 / s_inf
    tau = 1 / (eta_p * s**2)
    return PaperTheory(s=s, n=float(n), eta_p=float(eta_p), a0=a0, s_inf=s_inf, a_inf=a_inf, tau=tau,
                       t_half=tau / 2 * np.log((a_inf - a0) / a0),
                       loss_0=float(paper_loss(a0[None], s, n)[0]),
                       loss_inf=float(0.5 * (s * (s + s.sum()) / ((n + 1) * s + s.sum())).sum()))


def paper_loss(a: ArrayLike, s: ArrayLike, n: float) -> np.ndarray:
    """Eq. 14: L = ½ Σ_α s_α (s_α a_α²/a^∞_α − 2 s_α a_α + 1) for a `[..., d]` → `[...]`."""
    s = _spectrum(s)
    a = np.asarray(a, dtype=np.float64)
    s_inf = (n + 1) / n * s + s.sum() / n
    return 0.5 * (s * (s * s_inf * a**2 - 2 * s * a + 1)).sum(-1)


def paper_ode_rhs(p: ArrayLike, q: ArrayLike, s: ArrayLike, n: float, eta_p: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. 9–10 per mode: (dp/dt, dq/dt), τ_α ṗ = q(1 − pq s^∞), τ_α q̇ = p(1 − pq s^∞)."""
    s = _spectrum(s)
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    s_inf = (n + 1) / n * s + s.sum() / n
    rate = eta_p * s**2
    gap = 1 - p * q * s_inf
    return rate * q * gap, rate * p * gap


def plateau_levels(s: ArrayLike, n: float) -> np.ndarray:
    """Loss plateaus of Eq. 14 as the modes are learned in order of decreasing s `[d+1]`:
    L_K = ½ [Σ_{α∉K} s_α + Σ_{α∈K} s_α (1 − s_α a^∞_α)], K the first k modes, k = 0..d."""
    s = np.sort(_spectrum(s))[::-1]
    a_inf = 1 / ((n + 1) / n * s + s.sum() / n)
    learned = s * (1 - s * a_inf)
    return np.array([0.5 * (learned[:k].sum() + s[k:].sum()) for k in range(s.size + 1)])


# ------------------------------------------------------------------------------ exact
def exact_optimum(s: ArrayLike, n: float) -> tuple[np.ndarray, float]:
    """The exact population optimum of the aligned model (ω = 1), spec §6.4: (a* `[d]`, L*).

    Over the active set A (modes with a* > 0), R = (N + 1 + |A|)/Σ_{β∈A} √s_β and
    a*_α = N/(N+1) (1/s_α) (1 − 1/(√s_α R)); with every mode active,
    L* = ½ [Tr S/(N+1) + N (Σ √s)²/((N+1)(N+1+d))]. A mode with √s_α R ≤ 1 is off (a* = 0): the
    smallest modes are dropped until every remaining one is active, and L* is evaluated from a* by
    `aligned_loss_at_optimum`.
    """
    s = _spectrum(s)
    order = np.argsort(-s)
    active = s.size
    while active > 0:
        idx = order[:active]
        r = (n + 1 + active) / np.sqrt(s[idx]).sum()
        if np.sqrt(s[idx].min()) * r > 1:
            break
        active -= 1
    a = np.zeros_like(s)
    a[idx] = n / (n + 1) / s[idx] * (1 - 1 / (np.sqrt(s[idx]) * r))
    return a, float(aligned_loss_at_optimum(s, n, a))


def aligned_loss_at_optimum(s: np.ndarray, n: float, a: np.ndarray) -> float:
    """The exact aligned loss (ω = 1) minimised over the balance p_α/q_α at fixed products
    a = pq ≥ 0 `[d]`. The only coupling is the 1/N term K_p K_q/N, K_p = Σ s p², K_q = Σ s² q²;
    by Cauchy–Schwarz its minimum over the balance is (Σ s^{3/2} a)²/N, so
    2L = Σ_α s_α ((N+1)/N s_α² a_α² − 2 s_α a_α + 1) + (Σ_α s_α^{3/2} a_α)²/N."""
    cross = (s**1.5 * a).sum() ** 2 / n
    return 0.5 * float((s * ((n + 1) / n * s**2 * a**2 - 2 * s * a + 1)).sum() + cross)


def escape_rate(s_alpha: float, k_q: float, k_p: float, n: float, eta_p: float) -> float:
    """Growth exponent g_α of an unlearned mode's (p_α, q_α) at the origin (spec §6.5), with K_q =
    Σ s²q², K_p = Σ s p² set by the learned modes: g = ηP [−(s K_q + s² K_p)/(2N) +
    √(((s K_q − s² K_p)/(2N))² + s⁴)]; a_α grows like e^{2gt}; g < 0 (stuck) iff K_q K_p > N² s."""
    s = float(s_alpha)
    mean = -(s * k_q + s * s * k_p) / (2 * n)
    half_gap = (s * k_q - s * s * k_p) / (2 * n)
    return float(eta_p * (mean + np.sqrt(half_gap**2 + s**4)))


def half_times(t: ArrayLike, a: ArrayLike, final: ArrayLike | None = None) -> np.ndarray:
    """First time each column of a `[T, d]` reaches half of `final` (default: its last value),
    interpolated linearly in t; NaN where it never does."""
    t, a = np.asarray(t, dtype=np.float64), np.asarray(a, dtype=np.float64)
    half = 0.5 * (a[-1] if final is None else np.asarray(final, dtype=np.float64))
    out = np.full(a.shape[1], np.nan)
    for j in range(a.shape[1]):
        above = np.nonzero(a[:, j] >= half[j])[0]
        if above.size == 0 or above[0] == 0:
            continue
        k = above[0]
        out[j] = t[k - 1] + (half[j] - a[k - 1, j]) * (t[k] - t[k - 1]) / (a[k, j] - a[k - 1, j])
    return out
