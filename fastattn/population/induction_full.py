"""The full disentangled transformer (all 28D² weights, `params="full"`) on its exact population
gradient, orthonormal data (Musat et al. 2025, Theorem 1, spec §5.2, §11.3).

At weights W in the 19-dimensional subspace spanned by the basis matrices B_k (⟨B_k, B_l⟩ = D δ_kl),
the data symmetries of Theorem 1 average the population gradient onto that subspace (the orbit mean
that `tests/population/test_induction_objectives.py` computes without any projection): ∇_W L =
Σ_k (∂L19/∂θ_k / D) B_k with θ = project(W) and L19 the exact Gram-space loss. A flow or GD from
structured weights (zero included) therefore never leaves the subspace, and this objective follows
the full model exactly. It evaluates ℓ(W) = L19(project(W)), whose gradient is that one everywhere
(so finite differences and Hessians are consistent), and refuses weights farther than `tol` from
the subspace, where the population loss has no closed form here.

Time: the library's flow is dW/dt = −½ ∇_W L, i.e. θ̇ = −∇_θ L / (2D): a record's time t is the
θ-coordinates' paper time t/(2D) (`paper_time`), and `gd` with lr λ is the paper's full-matrix
learning rate λ (θ moves by (λ/D) ∇_θ L per step, spec §7.7).
"""

from __future__ import annotations

import numpy as np

from fastattn.population.induction import BASIS, InductionGram19Objective, exact_for
from fastattn.population.objectives import Objective
from fastattn.population.registry import register_objective


def basis_matrix(D: int) -> np.ndarray:
    """E `[28D², 19]`: column k is B_k flattened in the model's order (W1 `[2D, 2D]`, W2 `[4D, 4D]`,
    W3 `[8D, D]`, row-major); EᵀE = D·I."""
    if D < 2 or D % 2:
        raise ValueError(f"dim={D} must be even (M swaps the two halves of the positional code)")
    h = D // 2
    pattern = {"I": np.eye(D), "M": np.block([[np.zeros((h, h)), np.eye(h)], [np.eye(h), np.zeros((h, h))]])}
    columns = []
    for b in BASIS:
        Ws = [np.zeros((2 * D, 2 * D)), np.zeros((4 * D, 4 * D)), np.zeros((8 * D, D))]
        Ws[b.matrix][b.row * D:(b.row + 1) * D, b.col * D:(b.col + 1) * D] = pattern[b.pattern]
        columns.append(np.concatenate([w.ravel() for w in Ws]))
    return np.stack(columns, axis=1)


class DisentangledFullObjective(Objective):
    """ℓ(W1, W2, W3) = L19(project(W)) of the full disentangled transformer on orthonormal data near
    its 19-dim subspace (module docstring). Flat parameters: W1, W2, W3 row-major (28D²)."""

    def __init__(self, D: int, N: int, query: str = "last", mask: str = "strict", tol: float = 1e-4):
        super().__init__()
        self.D, self.N, self.query, self.mask, self.tol = int(D), int(N), query, mask, float(tol)
        self.gram = InductionGram19Objective.orthonormal(self.N, query, mask)
        self.E = basis_matrix(self.D)

    def __repr__(self) -> str:
        return f"DisentangledFullObjective(D={self.D}, N={self.N}, query={self.query!r}, mask={self.mask!r})"

    def size(self) -> int:
        return 28 * self.D**2

    def paper_time(self, t):
        """The θ-coordinates' paper time (θ̇ = −∇_θ L) of the library's time `t` (array or float)."""
        return np.asarray(t) / (2 * self.D)

    def theta(self, params: np.ndarray) -> np.ndarray:
        """θ `[19]` = project(W): the pseudo-parameters (order `NAMES`)."""
        return self.E.T @ np.asarray(params, dtype=np.float64) / self.D

    def project(self, params: np.ndarray) -> np.ndarray:
        """`[28D²]` E θ(W): the nearest weights where this objective is exact (the orthogonal
        projection onto Theorem 1's subspace; generic tests draw their states through it)."""
        return self.E @ self.theta(params)

    def loss_grad(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        w = np.asarray(params, dtype=np.float64)
        theta = self.theta(w)
        off = float(np.linalg.norm(w - self.E @ theta))
        if off > self.tol * max(1.0, float(np.linalg.norm(w))):
            raise ValueError(f"the full disentangled model's exact population gradient is known on the "
                             f"19-dimensional subspace of Theorem 1 only; these weights are {off:.3g} off "
                             "it: start from zero (--init-scale 0) or structured weights, or train with a "
                             "sampled method (sgd)")
        loss, g = self.gram.loss_grad(theta)
        return float(loss), self.E @ np.asarray(g) / self.D

    def hessian(self, params: np.ndarray) -> np.ndarray:
        """`[28D², 28D²]` = E H19 Eᵀ / D² (H19 the Gram19 Hessian)."""
        self.loss_grad(params)                                   # refuses off-subspace weights
        return self.E @ self.gram.hessian(self.theta(params)) @ self.E.T / self.D**2

    def hvp(self, params: np.ndarray, u: np.ndarray) -> np.ndarray:
        self.loss_grad(params)
        H19 = self.gram.hessian(self.theta(params))
        return self.E @ (H19 @ (self.E.T @ np.asarray(u, dtype=np.float64))) / self.D**2


@register_objective("induction", "disentangled", exact_for=exact_for)
def _full(task, model) -> DisentangledFullObjective:
    if model.config.dim != task.dim:
        raise ValueError(f"the model's dim={model.config.dim} must equal the task's dim={task.dim}")
    return DisentangledFullObjective(task.dim, task.context, task.query, model.config.mask)
