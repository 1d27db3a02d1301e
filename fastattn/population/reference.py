"""PyTorch float64 reference of the closed-form population loss (autograd; dense; independent of C++).

Used by the tests and as the fallback backend when the compiled core is absent. Everything here is
the plain formula of docs/theory.md written with dense torch ops; nothing is clever on purpose.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from fastattn.configs.base import unflatten
from fastattn.population.legacy import family_first
from fastattn.population.moments import Moments

FAMILIES = ("merged", "cubic_mlp", "separate")


class LinearSizes(NamedTuple):
    """A linear attention model's sizes as the objectives know them: the fields its family's card
    reads to lay out the flat vector (`fastattn.configs.param_shapes`), as it reads a model config."""

    kind: str
    dim: int
    heads: int
    rank: int = 1


def sizes(config) -> LinearSizes:
    """The sizes of a linear attention model config (merged, cubic_mlp or separate): the one place
    they are read off it (the rank R is separate's; cubic_mlp reads as merged: w2 ≡ v, W1[h] ≡
    vec U_h, the same offsets and Γ)."""
    if not hasattr(config, "kind"):
        raise ValueError(f"config={config!r} is not a model config; pass the model's (e.g. "
                         "model.config or SeparateConfig(dim=3, heads=2, rank=1))")
    if config.kind not in FAMILIES:
        raise ValueError(f"model kind {config.kind!r} has no linear attention layout; pass the "
                         f"config of one of {sorted(FAMILIES)}")
    if config.kind == "separate":
        return LinearSizes("separate", config.dim, config.heads, config.rank)
    return LinearSizes("merged", config.dim, config.heads)


def gamma_torch(config, theta: torch.Tensor) -> torch.Tensor:
    """Γ `[D, D]` from the flat parameters `theta [P]` (differentiable); the blocks' offsets are
    the card's (merged and cubic_mlp: v, U; separate: v, K, Q)."""
    b = unflatten(sizes(config), theta)
    if "U" in b:
        return torch.einsum("i,iab->ab", b["v"], b["U"])
    return torch.einsum("i,ira,irb->ab", b["v"], b["K"], b["Q"])


@family_first(dims_at=2)
def loss_torch(config, theta: torch.Tensor, m: Moments) -> torch.Tensor:
    """L(θ) = tr(ΛS) + σ² − 2 tr(Γ ΛSΛ) + tr(Γᵀ B Γ Λ) with B = E[ββᵀ] (Moments.beta_second_moment)
    (scalar tensor) of the linear attention model `config` at `theta [P]`."""
    lam = torch.as_tensor(np.asarray(m.cov), dtype=torch.float64)
    S = torch.as_tensor(np.asarray(m.w_second), dtype=torch.float64)
    A = lam @ S @ lam
    B = torch.as_tensor(m.beta_second_moment(), dtype=torch.float64)
    G = gamma_torch(config, theta)
    return torch.trace(lam @ S) + float(m.noise) - 2 * torch.trace(G @ A) + torch.trace(G.T @ B @ G @ lam)


@family_first(dims_at=2)
def loss_and_grad(config, params: np.ndarray, moments: Moments) -> tuple[float, np.ndarray]:
    """Loss (float) and gradient `[P]` of one model (`config`, params `[P]`) by torch autograd."""
    th = torch.tensor(np.asarray(params, dtype=np.float64), requires_grad=True)
    L = loss_torch(config, th, moments)
    (g,) = torch.autograd.grad(L, th)
    return float(L.detach()), g.numpy()


@family_first(dims_at=2)
def hessian(config, params: np.ndarray, moments: Moments) -> np.ndarray:
    """Dense Hessian `[P, P]` by double autograd."""
    th = torch.tensor(np.asarray(params, dtype=np.float64))
    Hm = torch.autograd.functional.hessian(lambda t: loss_torch(config, t, moments), th)
    return Hm.numpy()
