"""Reference in-context predictors with the models' call signature
`predictor(x [B, L, d], y [B, L], x_q [B, d], lengths=None) -> ŷ_q [B]` (He et al. 2025 spec §5.1).

They hold no parameters to train; `fastattn.analysis.risk.monte_carlo_risk` evaluates them and the
trained models alike. The single-head kernel regressor (§1.6) is a `KernelRegressors` model with one
head (`single_head_kernel_regressor`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fastattn import _validate as check
from fastattn.models.multihead_softmax import KernelRegressors


def _mask_and_length(y: torch.Tensor, lengths: torch.Tensor | None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """(mask `[B, L]` of real context rows, L per sequence `[B, 1]`)."""
    n = y.shape[1]
    if lengths is None:
        return torch.ones_like(y), torch.full_like(y[:, :1], n)
    mask = (torch.arange(n, device=y.device)[None] < lengths[:, None]).to(y.dtype)
    return mask, lengths.to(y.dtype)[:, None]


@dataclass(frozen=True)
class GradientDescent:
    """One GD step from β₀ = 0: ŷ = (η/L) Σ_ℓ y_ℓ x̃_ℓᵀ Ω x_q with x̃_ℓ = x_ℓ (vanilla) or
    x_ℓ − x̄ (debiased). Ω = I unless `precondition` `[d, d]` (preconditioned dGD, §5.6)."""

    eta: float
    debiased: bool = False
    precondition: np.ndarray | None = None

    def __call__(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                 lengths: torch.Tensor | None = None) -> torch.Tensor:
        mask, n = _mask_and_length(y, lengths)
        if self.debiased:
            x = (x - (x * mask[..., None]).sum(1, keepdim=True) / n[..., None]) * mask[..., None]
        q = x_q if self.precondition is None else x_q @ torch.as_tensor(
            self.precondition, dtype=x_q.dtype, device=x_q.device).T
        return self.eta * torch.einsum("bl,bld,bd->b", y * mask, x, q) / n[:, 0]


def debiased_gd(eta: float, precondition: np.ndarray | None = None) -> GradientDescent:
    """ŷ^dGD(η) = (η/L) Σ_ℓ y_ℓ (x_ℓ − x̄)ᵀ Ω x_q (Theorem 1's ŷ^gd)."""
    return GradientDescent(eta, debiased=True, precondition=precondition)


@dataclass(frozen=True)
class Ridge:
    """ŷ = x_qᵀ (XᵀX + λI)⁻¹ Xᵀ y; λ = σ² d is the Bayes posterior mean for β ~ N(0, I/d)."""

    lam: float

    def __post_init__(self) -> None:
        check.nonnegative_float("lam", self.lam)

    def __call__(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                 lengths: torch.Tensor | None = None) -> torch.Tensor:
        mask, _ = _mask_and_length(y, lengths)
        xm = x * mask[..., None]
        gram = xm.transpose(1, 2) @ xm + self.lam * torch.eye(x.shape[-1], dtype=x.dtype)
        beta = torch.linalg.solve(gram, torch.einsum("bld,bl->bd", xm, y * mask))
        return (beta * x_q).sum(-1)


def single_head_kernel_regressor(d: int, omega: float, mu: float,
                                 dtype: str = "float64") -> KernelRegressors:
    """The one-head NW predictor μ Σ_ℓ y_ℓ smax(ω X x_q)_ℓ (spec §1.6; `theory.he2025.single_head_nw`
    gives the repo's (ω, μ))."""
    model = KernelRegressors(d, 1, dtype=dtype)
    with torch.no_grad():
        model.omega.fill_(omega)
        model.mu.fill_(mu)
    return model.requires_grad_(False)
