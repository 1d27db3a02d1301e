"""KQ/OV pattern metrics of multi-head attention on in-context regression (He et al. 2025, spec §4.2).

Inputs are the per-head circuits `KQ [..., H, D, D]` (D = d+1, scaled as the model scores tokens) and
the effective OV rows `OV [..., H, D]` (`MultiHeadSoftmax.extract_kq`, `extract_ov`); any leading
dims (e.g. `[T]` snapshots of a trajectory) are kept. Blocks (§1.2): A_h = KQ[:d, :d], b_h = KQ[d, :d],
c_h = OV[:d], μ_h = OV[d]; ω_h = tr(A_h)/d. The last column of KQ and the other rows of OV never
reach ŷ and are ignored.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

#: the dummy-head threshold τ of M7 (a library choice)
DUMMY_TAU = 0.1


def head_parameters(kq: ArrayLike, ov: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(ω_h = tr(A_h)/d, μ_h) `[..., H]` each."""
    kq, ov = np.asarray(kq, float), np.asarray(ov, float)
    d = kq.shape[-1] - 1
    return np.trace(kq[..., :d, :d], axis1=-2, axis2=-1) / d, ov[..., d]


def dummy_heads(mu: np.ndarray, tau: float = DUMMY_TAU) -> np.ndarray:
    """M7: `[..., H]` True where |μ_h| < τ max_k |μ_k|: the head adds (almost) nothing to ŷ.

    The spec's M7 also asks |ω_h| < τ max_k |ω_k|; trained H = 4 models have inert heads with
    μ ≈ ±0.003 but ω ≈ ±0.04 (a third of γ), which that reading counts as live (docs/he2025.md)."""
    return np.abs(mu) < tau * np.abs(mu).max(-1, keepdims=True)


def pattern_metrics(kq: ArrayLike, ov: ArrayLike, tau: float = DUMMY_TAU) -> dict[str, np.ndarray]:
    """Metrics M1–M11 of spec §4.2, each `[..., H]` (per head) or `[...]` (per model):

    - per head: "omega", "mu", "diag_ratio" (M1 ‖diag A‖/‖A‖_F), "diag_spread" (M2
      Var(diag A)/mean(diag A)²), "ov_last_ratio" (M3 |μ|/‖(c, μ)‖), "isotropy_error"
      (M4 ‖A − ωI‖_F/‖A‖_F), "y_leakage" (M5 ‖b‖√d/‖A‖_F), "dummy" (M7, `dummy_heads`), "sign" (+1 positive,
      −1 negative, 0 dummy);
    - per model: "sign_match" (M6, fraction of non-dummy heads with ωμ > 0), "n_dummy", "gamma" and
      "gamma_cv" (M8 over non-dummy heads), "zero_sum" (M9 |Σμ|/Σ|μ|), "mu_plus", "mu_minus",
      "eta_eff" (M10 Σ μ_h ω_h), "intercept" (M11 Σ μ_h).
    """
    kq, ov = np.asarray(kq, float), np.asarray(ov, float)
    d = kq.shape[-1] - 1
    a = kq[..., :d, :d]
    diag = np.diagonal(a, axis1=-2, axis2=-1)
    fro = np.linalg.norm(a, axis=(-2, -1))
    omega, mu = head_parameters(kq, ov)
    dummy = dummy_heads(mu, tau)
    live = ~dummy
    abs_w = np.where(live, np.abs(omega), np.nan)
    gamma = np.nanmean(abs_w, -1)
    match = np.where(live, omega * mu > 0, False).sum(-1) / np.maximum(live.sum(-1), 1)
    return {
        "omega": omega,
        "mu": mu,
        "diag_ratio": np.linalg.norm(diag, axis=-1) / fro,
        "diag_spread": diag.var(-1) / diag.mean(-1) ** 2,
        "ov_last_ratio": np.abs(mu) / np.linalg.norm(ov[..., : d + 1], axis=-1),
        "isotropy_error": np.linalg.norm(a - omega[..., None, None] * np.eye(d), axis=(-2, -1)) / fro,
        "y_leakage": np.linalg.norm(kq[..., d, :d], axis=-1) * np.sqrt(d) / fro,
        "dummy": dummy,
        "sign": np.where(dummy, 0, np.sign(omega)).astype(int),
        "sign_match": match,
        "n_dummy": dummy.sum(-1),
        "gamma": gamma,
        "gamma_cv": np.nanstd(abs_w, -1) / gamma,
        "zero_sum": np.abs(mu.sum(-1)) / np.abs(mu).sum(-1),
        "mu_plus": np.where(omega > 0, mu, 0.0).sum(-1),
        "mu_minus": np.where(omega < 0, mu, 0.0).sum(-1),
        "eta_eff": (mu * omega).sum(-1),
        "intercept": mu.sum(-1),
    }
