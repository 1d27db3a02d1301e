"""The minimal in-context learning task of Musat et al. 2025 (spec §2): N item–label pairs and a
query item; the target is the query's label.

Rows of X `[B, L, 2D]` (L = 2N + 1, 0-based): X[2i] = [a_i | p_i] (item), X[2i+1] = [b_i | p_i M]
(label, the half-swapped positional code), X[2N] = [a_q | 0] (the query, no position); y = b_q.

Data:
- "gaussian": every entry of a_i, b_i, p_i i.i.d. N(0, 1) (App. C; norms ≈ √D);
- "orthonormal": {a_i, b_i} orthonormal, p_iᵀp_j = δ_ij and p_iᵀ M p_j = 0 (Asm. 7; D ≥ 2N), drawn
  by the recipe of spec §2.3 (QR of Gaussians; positions in the first half, rotated by an R that
  commutes with M).
Query: "uniform" (q ~ Unif{1..N}) or "last" (q = N, Asm. 8). Loss: ‖y − ỹ‖² summed ("sum", the
theory's) or averaged ("mean", App. C/D's stable λ = 1) over the D output coordinates, averaged over
the batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
import torch

from fastattn import _validate as check
from fastattn.tasks.base import register_task
from fastattn.tasks.haar import haar_frame
from fastattn.tasks.linear_regression import _generator

DATA = ("gaussian", "orthonormal")
QUERIES = ("uniform", "last")
REDUCTIONS = ("sum", "mean")
_STREAM_TRAIN, _STREAM_FIXED, _STREAM_TEST = 11, 12, 13


class InductionBatch(NamedTuple):
    """X `[B, L, 2D]`, y `[B, D]`, q `[B]` (1-based queried pair)."""

    X: torch.Tensor
    y: torch.Tensor
    q: torch.Tensor


def _orthonormal_columns(g: torch.Generator, B: int, D: int, n: int, dtype, device) -> torch.Tensor:
    """B Haar-distributed frames of n orthonormal columns in R^D `[B, D, n]`."""
    return haar_frame(torch.randn(B, D, n, generator=g, dtype=torch.float64)).to(dtype=dtype, device=device)


@register_task
@dataclass(frozen=True)
class InductionPairs:
    """dim: D (even); context: N pairs; data, query, reduction as in the module doc; data_seed."""

    kind: ClassVar[str] = "induction"
    losses: ClassVar[tuple[str, ...]] = ("query",)
    dim: int
    context: int = 8
    data: str = "gaussian"
    query: str = "uniform"
    reduction: str = "sum"
    data_seed: int = 0

    def __post_init__(self) -> None:
        D = check.positive_int("dim", self.dim)
        if D % 2:
            raise ValueError(f"dim={D} must be even (M swaps the halves of the positional code)")
        N = check.positive_int("context", self.context)
        for name, value, choices in (("data", self.data, DATA), ("query", self.query, QUERIES),
                                     ("reduction", self.reduction, REDUCTIONS)):
            if value not in choices:
                raise ValueError(f"{name}={value!r} is unknown; use one of {list(choices)}")
        if self.data == "orthonormal" and D < 2 * N:
            raise ValueError(f"data='orthonormal' needs dim >= 2*context (2N orthonormal items and labels); "
                             f"got dim={D}, context={N}")

    @property
    def length(self) -> int:
        """L = 2N + 1 tokens."""
        return 2 * self.context + 1

    @property
    def sequence_size(self) -> int:
        return self.length * 2 * self.dim + self.dim

    def _draw(self, g: torch.Generator, B: int, dtype, device) -> InductionBatch:
        D, N = self.dim, self.context
        h = D // 2
        if self.data == "gaussian":
            a, b, p = (torch.randn(B, N, D, generator=g, dtype=torch.float64) for _ in range(3))
        else:
            ab = _orthonormal_columns(g, B, D, 2 * N, torch.float64, "cpu").transpose(1, 2)  # [B, 2N, D]
            a, b = ab[:, :N], ab[:, N:]
            up = _orthonormal_columns(g, B, h, N, torch.float64, "cpu").transpose(1, 2)     # [B, N, D/2]
            E1, E2 = (_orthonormal_columns(g, B, h, h, torch.float64, "cpu") for _ in range(2))
            R = 0.5 * torch.cat([torch.cat([E1 + E2, E1 - E2], 2), torch.cat([E1 - E2, E1 + E2], 2)], 1)
            p = torch.cat([up, torch.zeros_like(up)], dim=-1) @ R                          # p_i R
        if self.query == "uniform":
            q = torch.randint(1, N + 1, (B,), generator=g)
        else:
            q = torch.full((B,), N, dtype=torch.long)
        pm = torch.cat([p[..., h:], p[..., :h]], dim=-1)                                    # p_i M
        X = torch.zeros(B, 2 * N + 1, 2 * D, dtype=torch.float64)
        X[:, 0:2 * N:2, :D], X[:, 0:2 * N:2, D:] = a, p
        X[:, 1:2 * N:2, :D], X[:, 1:2 * N:2, D:] = b, pm
        rows = torch.arange(B)
        X[:, -1, :D] = a[rows, q - 1]
        y = b[rows, q - 1]
        return InductionBatch(X.to(dtype=dtype, device=device), y.to(dtype=dtype, device=device), q)

    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> InductionBatch:
        """Batch number `step`: a pure function of (data_seed, step)."""
        check.positive_int("batch_size", batch_size)
        return self._draw(_generator(self.data_seed, step, _STREAM_TRAIN), batch_size, dtype, device)

    def loss(self, model: torch.nn.Module, batch: InductionBatch, name: str = "query") -> torch.Tensor:
        """Mean over the batch of ‖y − ỹ‖² ("sum") or ‖y − ỹ‖²/D ("mean"); model(X) → ỹ `[B, D]`."""
        if name not in self.losses:
            raise ValueError(f"loss={name!r} is unknown for task 'induction'; use one of {list(self.losses)}")
        err = ((model(batch.X) - batch.y) ** 2).sum(-1)
        return (err if self.reduction == "sum" else err / self.dim).mean()

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> InductionBatch:
        if whiten:
            raise ValueError("task 'induction' has no whitening; pass whiten=False")
        return self._draw(_generator(seed, 0, _STREAM_FIXED), check.positive_int("size", size), dtype, device)

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, InductionBatch]:
        return {"query": self._draw(_generator(seed, 0, _STREAM_TEST), check.positive_int("size", size),
                                    dtype, device)}


def batch_grams(batch: InductionBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Gram matrices of a batch (spec §5.5): G1 = X1X1ᵀ, G2 = X2X2ᵀ, GM = X2 M X2ᵀ `[B, L, L]`
    and the target (queried label) positions `[B]` (0-based), for the Gram-space objective."""
    X = batch.X.detach().double().cpu()
    D = X.shape[-1] // 2
    X1, X2 = X[..., :D], X[..., D:]
    X2M = torch.cat([X2[..., D // 2:], X2[..., :D // 2]], dim=-1)
    return ((X1 @ X1.transpose(1, 2)).numpy(), (X2 @ X2.transpose(1, 2)).numpy(),
            (X2 @ X2M.transpose(1, 2)).numpy(), (2 * batch.q - 1).numpy())
