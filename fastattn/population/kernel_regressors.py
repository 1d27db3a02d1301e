"""He et al. 2025's approximate loss L̃(ω, μ) of the reduced (ω, μ) model as an `Objective` the shared
C++ integrators follow (a Python trampoline objective; closed forms in `fastattn.theory.he2025`).

Flat layout `[2H]`: ω `[H]` then μ `[H]` (the `KernelRegressors` model's PARAM_ORDER, scalar form).
The flow obeys dθ/dt = −½ ∂L̃/∂θ (docs/conventions.md). The repo's GD on L̃/2 with learning rate η
is Euler with lr = η/2 here, and its plot time `step × η` is our t. L̃ drops O(1/L) terms (spec
§5.2), so it is not registered as the exact population objective of any (task, model) pair.
"""

from __future__ import annotations

import numpy as np

from fastattn import _validate as check
from fastattn.population.objectives import Objective
from fastattn.theory import he2025


class ApproxLossObjective(Objective):
    """L̃(ω, μ) at (d, L, σ²) for H heads; `loss_grad` in closed form (§5.2)."""

    def __init__(self, heads: int, d: int, L: float, sigma2: float):
        super().__init__()
        self.heads = check.positive_int("heads", heads)
        self.d = check.positive_int("d", d)
        self.L = check.positive_float("L", L)
        self.sigma2 = check.nonnegative_float("sigma2", sigma2)

    def size(self) -> int:
        return 2 * self.heads

    def loss_grad(self, params):
        w, m = params[: self.heads], params[self.heads:]
        loss = he2025.approx_loss(w, m, self.d, self.L, self.sigma2)
        gw, gm = he2025.approx_grad(w, m, self.d, self.L, self.sigma2)
        return loss, np.concatenate([gw, gm])
