"""PyTorch float64 reference of the closed-form population loss (autograd; dense; independent of C++).

Used by the tests and as the fallback backend when the compiled core is absent. Everything here is
the plain formula of docs/theory.md written with dense torch ops; nothing is clever on purpose.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from fastattn.configs.base import unflatten
from fastattn.population.moments import Moments

FAMILIES = ("merged", "cubic_mlp", "separate")


class LinearSizes(NamedTuple):
    """A linear attention model's sizes as the objectives know them: the fields its family's card
    reads to lay out the flat vector (`fastattn.configs.param_shapes`), as it reads a model config."""

    kind: str
    dim: int
    heads: int
    rank: int = 1


def gamma_torch(family: str, theta: torch.Tensor, D: int, H: int, R: int = 1) -> torch.Tensor:
    """Γ `[D, D]` from the flat parameters `theta [P]` (differentiable); the blocks' offsets are
    the card's (merged and cubic_mlp: v, U; separate: v, K, Q)."""
    kind = "separate" if family == "separate" else "merged"    # w2 ≡ v, W1[h] ≡ vec U_h
    b = unflatten(LinearSizes(kind, D, H, R), theta)
    if kind == "merged":
        return torch.einsum("i,iab->ab", b["v"], b["U"])
    return torch.einsum("i,ira,irb->ab", b["v"], b["K"], b["Q"])


def loss_torch(family: str, theta: torch.Tensor, dims, m: Moments) -> torch.Tensor:
    """L(θ) = tr(ΛS) + σ² − 2 tr(Γ ΛSΛ) + tr(Γᵀ B Γ Λ) with B = E[ββᵀ] (Moments.beta_second_moment)
    (scalar tensor)."""
    D, H, R = dims
    lam = torch.as_tensor(np.asarray(m.cov), dtype=torch.float64)
    S = torch.as_tensor(np.asarray(m.w_second), dtype=torch.float64)
    A = lam @ S @ lam
    B = torch.as_tensor(m.beta_second_moment(), dtype=torch.float64)
    G = gamma_torch(family, theta, D, H, R)
    return torch.trace(lam @ S) + float(m.noise) - 2 * torch.trace(G @ A) + torch.trace(G.T @ B @ G @ lam)


def loss_and_grad(family: str, params: np.ndarray, dims, moments: Moments) -> tuple[float, np.ndarray]:
    """Loss (float) and gradient `[P]` of one model by torch autograd."""
    th = torch.tensor(np.asarray(params, dtype=np.float64), requires_grad=True)
    L = loss_torch(family, th, dims, moments)
    (g,) = torch.autograd.grad(L, th)
    return float(L.detach()), g.numpy()


def hessian(family: str, params: np.ndarray, dims, moments: Moments) -> np.ndarray:
    """Dense Hessian `[P, P]` by double autograd."""
    th = torch.tensor(np.asarray(params, dtype=np.float64))
    Hm = torch.autograd.functional.hessian(lambda t: loss_torch(family, t, dims, moments), th)
    return Hm.numpy()
