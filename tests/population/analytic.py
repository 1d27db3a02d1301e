"""Small objectives with closed-form gradient flows, written in Python on the core's Objective
trampoline (no integrator knows them): the integrator tests check accuracy and order against them.

Convention: the flow is dθ/dt = −½ ∂L/∂θ (docs/conventions.md), so L = ½ θᵀHθ flows as
θ(t) = expm(−H t/2) θ₀.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import expm

from fastattn._core import CostHint, Objective


class Quadratic(Objective):
    """L(θ) = ½ θᵀ H θ with H `[P, P]` symmetric: gradient Hθ; θ(t) = expm(−Ht/2) θ₀. First order
    only (no Hessian): what a model written quickly in numpy offers."""

    def __init__(self, H: np.ndarray):
        super().__init__()
        self.H = np.asarray(H, dtype=np.float64)

    def size(self) -> int:
        return self.H.shape[0]

    def loss_grad(self, params):
        g = self.H @ params
        return 0.5 * float(params @ g), g

    def flow(self, params0: np.ndarray, t: float) -> np.ndarray:
        """θ(t) `[P]`."""
        return expm(-0.5 * t * self.H) @ params0


class QuadraticWithHessian(Quadratic):
    """The same objective with its second derivatives: dense Hessian H and products H u."""

    def hessian(self, params):
        return self.H.copy()

    def hvp(self, params, u):
        return self.H @ u


class StiffDiagonal(Objective):
    """L(θ) = Σ_i λ_i (θ_i²/2 + θ_i⁴/4), λ spread over decades: a nonlinear, stiff, diagonal flow
    θ̇_i = −½ λ_i (θ_i + θ_i³) with θ_i(t)² = c_i e^{−λ_i t} / (1 − c_i e^{−λ_i t}),
    c_i = θ_i(0)² / (1 + θ_i(0)²) (sign kept)."""

    def __init__(self, lam: np.ndarray):
        super().__init__()
        self.lam = np.asarray(lam, dtype=np.float64)

    def size(self) -> int:
        return self.lam.size

    def loss_grad(self, params):
        loss = float(np.sum(self.lam * (params**2 / 2 + params**4 / 4)))
        return loss, self.lam * (params + params**3)

    def hessian(self, params):
        return np.diag(self.lam * (1 + 3 * params**2))

    def hvp(self, params, u):
        return self.lam * (1 + 3 * params**2) * u

    def cost_hint(self):
        return CostHint(hvp=1.0)

    def flow(self, params0: np.ndarray, t: float) -> np.ndarray:
        """θ(t) `[P]`."""
        c = params0**2 / (1 + params0**2)
        e = c * np.exp(-self.lam * t)
        return np.sign(params0) * np.sqrt(e / (1 - e))

    def loss_at(self, params0: np.ndarray, t: float) -> float:
        th = self.flow(params0, t)
        return float(np.sum(self.lam * (th**2 / 2 + th**4 / 4)))
