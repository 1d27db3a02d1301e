"""PyTorch float64 reference of the closed-form population loss (autograd; dense; independent of C++).

Used by the tests and as the fallback backend when the compiled core is absent. Everything here is
the plain formula of docs/theory.md written with dense torch ops; nothing is clever on purpose.
"""

from __future__ import annotations

import numpy as np
import torch

from fastattn.population.moments import Moments

FAMILIES = ("merged", "cubic_mlp", "separate")


def n_params(family: str, D: int, H: int, R: int = 1) -> int:
    """Flat parameter count: H(1+D²) for merged/cubic_mlp, H(1+2RD) for separate."""
    return H * (1 + D * D) if family in ("merged", "cubic_mlp") else H * (1 + 2 * R * D)


def gamma_torch(family: str, theta: torch.Tensor, D: int, H: int, R: int = 1) -> torch.Tensor:
    """Γ `[D, D]` from the flat parameters `theta [P]` (differentiable)."""
    v = theta[:H]
    if family in ("merged", "cubic_mlp"):
        U = theta[H:].reshape(H, D, D)
        return torch.einsum("i,iab->ab", v, U)
    K = theta[H : H + H * R * D].reshape(H, R, D)
    Q = theta[H + H * R * D :].reshape(H, R, D)
    return torch.einsum("i,ira,irb->ab", v, K, Q)


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
