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


# ------------------------------------------------------------------ multi-task predictors (§5.8)
# Their call signature is the multi-output models': y `[B, L, N]` → ŷ `[B, N]`.
@dataclass(frozen=True)
class MultiTaskGD:
    """One (debiased) GD step per task with its own preconditioner: ŷ_n = (1/L) Σ_ℓ y_ℓn x̃_ℓᵀ Γ_n x_q,
    `gammas` `[N, d, d]` (spec §5.8: the separate dGDs of H ≥ 2N heads, Γ_n = η diag(1_{S_n}), and
    the weighted dGD of two heads, one Γ for all tasks; `separate_dgd`, `weighted_dgd`)."""

    gammas: np.ndarray
    debiased: bool = True

    def __call__(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                 lengths: torch.Tensor | None = None) -> torch.Tensor:
        mask, n = _mask_and_length(y[..., 0], lengths)
        if self.debiased:
            x = (x - (x * mask[..., None]).sum(1, keepdim=True) / n[..., None]) * mask[..., None]
        g = torch.as_tensor(np.asarray(self.gammas), dtype=x.dtype, device=x.device)
        return torch.einsum("bln,bld,nde,be->bn", y * mask[..., None], x, g, x_q) / n


def separate_dgd(eta: float, support_mask: np.ndarray) -> MultiTaskGD:
    """N separate debiased GDs, task n on its support: Γ_n = η diag(1_{S_n}) (`support_mask`
    `[N, d]`, `MultiTaskRegression.support_mask`)."""
    m = np.asarray(support_mask, dtype=np.float64)
    return MultiTaskGD(eta * np.stack([np.diag(r) for r in m]))


def weighted_dgd(weights: np.ndarray, outputs: int) -> MultiTaskGD:
    """One debiased GD with the per-coordinate steps `weights` `[d]` for all `outputs` tasks (the
    two-head multi-task predictor of spec §5.8: 2μ̆ω̆* on S*, 2μ̆ω̆^c on S^c)."""
    return MultiTaskGD(np.repeat(np.diag(np.asarray(weights, float))[None], outputs, 0))


@dataclass(frozen=True)
class MultiTaskKernel:
    """The patterned multi-output model (spec §1.9): ŷ_n = Σ_h μ_hn Σ_ℓ y_ℓn smax_ℓ(x_ℓᵀ diag(ω_h) x_q),
    ω `[H, d]`, μ `[H, N]`."""

    omega: np.ndarray
    mu: np.ndarray

    def __call__(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                 lengths: torch.Tensor | None = None) -> torch.Tensor:
        w = torch.as_tensor(np.asarray(self.omega), dtype=x.dtype, device=x.device)
        mu = torch.as_tensor(np.asarray(self.mu), dtype=x.dtype, device=x.device)
        scores = torch.einsum("bld,hd,bd->bhl", x, w, x_q)
        if lengths is not None:
            mask = torch.arange(x.shape[1], device=x.device)[None] < lengths[:, None]
            scores = scores.masked_fill(~mask[:, None], float("-inf"))
        return torch.einsum("hn,bhl,bln->bn", mu, torch.softmax(scores, -1), y)


@dataclass(frozen=True)
class MultiTaskRidge:
    """The Bayes posterior mean for multi-task regression with β ~ N(0, v I): each response is a
    linear observation (x_ℓ ⊙ 1_{S_n})ᵀ β, so with one shared β all tasks' responses are pooled,
    β̂ = (Σ_n X_nᵀX_n + (σ²/v) I)⁻¹ Σ_n X_nᵀ y_n with X_n = X diag(1_{S_n}); with independent β_n
    (`shared=False`) each task is its own ridge. ŷ_n = (x_q ⊙ 1_{S_n})ᵀ β̂_n."""

    support_mask: np.ndarray
    lam: float
    shared: bool = True

    def __call__(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                 lengths: torch.Tensor | None = None) -> torch.Tensor:
        mask, _ = _mask_and_length(y[..., 0], lengths)
        m = torch.as_tensor(np.asarray(self.support_mask), dtype=x.dtype, device=x.device)
        xn = torch.einsum("bld,nd,bl->bnld", x, m, mask)                      # X_n [B, N, L, d]
        gram = torch.einsum("bnld,bnle->bnde", xn, xn)
        rhs = torch.einsum("bnld,bln->bnd", xn, y)
        eye = self.lam * torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
        if self.shared:
            beta = torch.linalg.solve(gram.sum(1) + eye, rhs.sum(1))[:, None]     # [B, 1, d]
        else:
            beta = torch.linalg.solve(gram + eye, rhs)                            # [B, N, d]
        return torch.einsum("bnd,nd,bd->bn", beta.expand(-1, m.shape[0], -1), m, x_q)
