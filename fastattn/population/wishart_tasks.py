"""Exact population objectives of the linear transformer on `wishart_tasks` (Mainali & Teixeira
2025; docs/mainali2025.md §2).

- `WishartReducedObjective` (C++): the reduced model (p1 = q2 = 0 frozen) for general, non-aligned
  p2, q1, with the full Wishart coupling E[M B M] = (N+1)/N S B S + tr(BS)/N S that the paper's
  diagonal-Ŝ step drops. Parameters: the model's flat layout [p1, p2, q1, q2]; working basis: the
  blocks conjugated by U. A fixed task set enters through Ω = (1/P) Σ_μ λ_μ λ_μᵀ, exactly (the
  loss is quadratic in λ).
- `WishartAlignedObjective` (C++): the aligned per-mode form, parameters [p, q] (the diagonals of
  Uᵀ p2 U, Uᵀ q1 U), O(d) per evaluation.
- `FullModelObjective` (torch float64, autograd): the full model (every block, query-in-Gram term
  included; spec §6.6), averaged over the fixed task set, or for fresh tasks over the degree-5
  Gaussian cubature with 2d² + 1 nodes, which is exact because the conditional loss has degree 4
  in λ.

The objectives follow the integrators' flow dθ/dτ = −½ ∇L; the paper's flow dθ/dt = −ηP ∇L in
epochs is the same path with t = τ / (2ηP) (docs/conventions.md, "Task-centric SGD").
"""

from __future__ import annotations

import numpy as np
import torch

from fastattn._core_loader import core
from fastattn.population.cubature import cubature5
from fastattn.population.objectives import Objective
from fastattn.population.registry import register_objective


class WishartReducedObjective(core.WishartReduced):
    """The reduced model's exact population loss (C++). s `[d]`, N, omega `[d, d]`, U `[d, d]`."""

    def __init__(self, s, N: float, omega, U):
        s = np.asarray(s, dtype=np.float64)
        super().__init__(s=s, N=float(N), omega=np.asarray(omega, dtype=np.float64),
                         U=np.asarray(U, dtype=np.float64))
        self.s, self.N = s, float(N)

    @classmethod
    def of_task(cls, task) -> WishartReducedObjective:
        return cls(task.s, task.context, task.omega(), task.U)


class WishartAlignedObjective(core.WishartAligned):
    """The aligned per-mode exact population loss (C++). s `[d]`, N, omega `[d]` (default 1)."""

    def __init__(self, s, N: float, omega=None):
        s = np.asarray(s, dtype=np.float64)
        w = np.ones_like(s) if omega is None else np.asarray(omega, dtype=np.float64)
        super().__init__(s=s, N=float(N), omega=w)
        self.s, self.N, self.omega = s, float(N), w


# ------------------------------------------------------------------------------ full model
def full_conditional_loss(sigma: torch.Tensor, n: float, w: torch.Tensor, p1: torch.Tensor,
                          p2: torch.Tensor, q1: torch.Tensor, q2: torch.Tensor,
                          include_query: bool = True) -> torch.Tensor:
    """E over contexts and query of ½‖ŷ − W x_q‖² for tasks W `[T, d, d]` (spec §6.6) → `[T]`.

    A = p1 + p2 W, B = q1 + Wᵀ q2, H = sym(q1); with E(C) = (N+1)/N ΣCΣ + tr(CΣ)/N Σ and c = 1/N
    (0 without the query column in the Gram matrix):
    2L = tr[AᵀA E(BΣBᵀ)] + tr[WᵀWΣ] − 2 tr[BᵀΣAᵀWΣ] + c² m6(p1ᵀp1, H) + 2c m4(sym((AΣB)ᵀp1), H)
         − 2c m4(sym(p1ᵀW), H), m4, m6 the Gaussian quartic / sextic moments (spec (M2)).
    """
    c = 1.0 / n if include_query else 0.0

    def tr(x):
        return torch.diagonal(x, dim1=-2, dim2=-1).sum(-1)

    def sym(x):
        return 0.5 * (x + x.transpose(-1, -2))

    def wish(cm):
        return (n + 1) / n * sigma @ cm @ sigma + (tr(cm @ sigma) / n)[..., None, None] * sigma

    def m4(f, h):
        return tr(f @ sigma) * tr(h @ sigma) + 2 * tr(f @ sigma @ h @ sigma)

    def m6(g, h):
        tg, th = tr(g @ sigma), tr(h @ sigma)
        return (tg * th**2 + 2 * tg * tr(h @ sigma @ h @ sigma) + 4 * th * tr(g @ sigma @ h @ sigma)
                + 8 * tr(g @ sigma @ h @ sigma @ h @ sigma))

    a = p1 + p2 @ w
    b = q1 + w.transpose(-1, -2) @ q2
    h = sym(q1)
    wt = w.transpose(-1, -2)
    two_l = (tr(a.transpose(-1, -2) @ a @ wish(b @ sigma @ b.transpose(-1, -2))) + tr(wt @ w @ sigma)
             - 2 * tr(b.transpose(-1, -2) @ sigma @ a.transpose(-1, -2) @ w @ sigma)
             + c**2 * m6(p1.T @ p1, h)
             + 2 * c * m4(sym((a @ sigma @ b).transpose(-1, -2) @ p1), h)
             - 2 * c * m4(sym(p1.T @ w), h))
    return 0.5 * two_l


class FullModelObjective(Objective):
    """The full model's exact population loss (torch float64 closed form, gradient by autograd).

    Args: s `[d]`, N, U `[d, d]`, task_eigs `[P, d]` (a fixed set, weights 1/P) or None (fresh
    tasks: the exact degree-5 cubature), include_query: the query column in the Gram matrix.
    Parameters: the model's flat layout [p1, p2, q1, q2] (4 d²), original basis.
    """

    def __init__(self, s, N: float, U, task_eigs=None, include_query: bool = True):
        super().__init__()
        s = np.asarray(s, dtype=np.float64)
        u = np.asarray(U, dtype=np.float64)
        self.d, self.N, self.include_query = s.size, float(N), include_query
        if task_eigs is None:
            lam, wts = cubature5(self.d)
        else:
            lam = np.asarray(task_eigs, dtype=np.float64)
            wts = np.full(lam.shape[0], 1.0 / lam.shape[0])
        self._s, self._u, self._fresh = s, u, task_eigs is None
        self._sigma = torch.as_tensor((u * s) @ u.T)
        self._w = torch.as_tensor(np.einsum("ij,tj,kj->tik", u, lam, u))
        self._wts = torch.as_tensor(wts)

    def size(self) -> int:
        return 4 * self.d * self.d

    def _loss(self, theta: torch.Tensor) -> torch.Tensor:
        blocks = theta.reshape(4, self.d, self.d)
        losses = full_conditional_loss(self._sigma, self.N, self._w, *blocks,
                                       include_query=self.include_query)
        return (self._wts * losses).sum()

    def loss_grad(self, params):
        theta = torch.tensor(np.asarray(params, dtype=np.float64), requires_grad=True)
        loss = self._loss(theta)
        (grad,) = torch.autograd.grad(loss, theta)
        return loss.item(), grad.numpy()

    def hvp(self, params, u):
        theta = torch.as_tensor(np.asarray(params, dtype=np.float64))
        v = torch.as_tensor(np.asarray(u, dtype=np.float64))
        return torch.autograd.functional.hvp(self._loss, theta, v)[1].numpy()

    def hessian(self, params):
        theta = torch.as_tensor(np.asarray(params, dtype=np.float64))
        return torch.autograd.functional.hessian(self._loss, theta).numpy()

    def reduction_at(self, params) -> WishartReducedObjective | None:
        """The reduced model's C++ objective when it is this one's exact flow from `params`, else
        None: fresh tasks and p1 = q2 = 0 exactly.

        Why it is exact: fresh task eigenvalues λ ~ N(0, I) (and the cubature nodes) are symmetric
        under λ → −λ, i.e. W → −W. At p1 = q2 = 0 every term of ∂L/∂p1 and ∂L/∂q2 is odd in W (A =
        p2 W, B = q1: the p1-derivative is linear in W, the q2-derivative cubic), so its task mean
        vanishes; the flow never leaves p1 = q2 = 0, where A = p2 W, B = q1 and the query-in-Gram
        terms (all carrying p1) vanish, leaving the reduced model's loss. A fixed task set is not
        symmetric (odd moments of λ ≠ 0) and gets None.
        (tests/population/test_wishart_full_reduction.py checks both to rounding.)
        """
        if not self._fresh:
            return None
        theta = np.asarray(params, dtype=np.float64).reshape(4, self.d, self.d)
        if np.any(theta[0] != 0) or np.any(theta[3] != 0):
            return None
        return WishartReducedObjective(self._s, self.N, np.eye(self.d), self._u)


def _every_wishart_task(task, config) -> str | None:
    """None: the objectives cover every task of the card (a fixed task set exactly, fresh tasks by
    the degree-5 cubature, exact for the loss of degree 4 in λ) and both the reduced and the full
    model."""
    return None


@register_objective("wishart_tasks", "linear_transformer", exact_for=_every_wishart_task)
def _linear_transformer(task, model):
    if model.config.reduced:
        return WishartReducedObjective.of_task(task)
    return FullModelObjective(task.s, task.context, task.U, task.task_eigs)
