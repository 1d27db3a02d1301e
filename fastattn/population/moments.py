"""The task moments that the closed-form population loss of the linear models depends on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastattn.theory.gaussian import beta_second_moment


@dataclass(frozen=True, eq=False)
class Moments:
    """Everything the population loss of a zero-block linear model needs from a task.

    For ŷ_q = βᵀ Γ x_q with x ~ N(0, Λ), w with second moment S_w, label noise σ² and context length
    N, the loss depends on the task only through these four numbers (see docs/theory.md).

    Attributes:
        cov: Λ, the token covariance `[D, D]`, symmetric positive semi-definite.
        w_second: S_w = E w wᵀ = Σ_w + μ_w μ_wᵀ `[D, D]` (a mixture's second moment for in-weight tasks).
        noise: σ², the label-noise variance.
        inv_n: E(1/N) over the context-length distribution (1/N for a fixed N).
    """

    cov: np.ndarray
    w_second: np.ndarray
    noise: float
    inv_n: float

    @property
    def dim(self) -> int:
        return int(self.cov.shape[0])

    def beta_second_moment(self) -> np.ndarray:
        """B = E ββᵀ `[D, D]` of β = (1/N) Σ_n y_n x_n (fastattn.theory.gaussian.beta_second_moment)."""
        return beta_second_moment(self.cov, self.w_second, self.noise, self.inv_n)
