"""In-context multi-task linear regression (He et al. 2025 §Extensions; spec §2.3).

One prompt draws β; task n reads the coordinates S_n of it: y_n = β_{S_n}ᵀ x_{S_n} + ε_n, n ∈ [N].
The supports {S_n} are fixed across prompts (unknown to the model). The text's variant (the
default) shares one β ~ N(0, I_d/d) across the tasks and puts noise σ² on every response, the
query's included; the authors' code (spec §9.3) draws an independent β_n ~ N(0, I) per task
(`shared_beta=False, beta_var=1`), context noise 4·0.1 (`noise=0.4`), a noise-free query
(`query_noise=False`) and L = 48.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
import torch

from fastattn import _validate as check
from fastattn.tasks.base import register_task
from fastattn.tasks.linear_regression import _STREAM_BATCH, _STREAM_DATASET, _generator

#: the text's experiment (spec §2.3): d = 6, S_1 = {1,2,3,4}, S_2 = {3,4,5,6} (0-based here)
PAPER_SUPPORTS = ((0, 1, 2, 3), (2, 3, 4, 5))


@dataclass(frozen=True)
class MultiTaskBatch:
    """x `[B, L, d]`, y `[B, L, N]`, x_q `[B, d]`, y_q `[B, N]`, beta `[B, N, d]` (task n's
    coefficients, zero off S_n), lengths `[B]` (all L)."""

    x: torch.Tensor
    y: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor
    beta: torch.Tensor
    lengths: torch.Tensor

    def __len__(self) -> int:
        return int(self.x.shape[0])


@register_task
@dataclass(frozen=True)
class MultiTaskRegression:
    """In-context multi-task regression (kind "multitask_regression"), x ~ N(0, I_d).

    Args:
        dim: covariate dimension d.
        supports: S_n per task, 0-based coordinate indices (N = len(supports)).
        context: context length L.
        noise: variance σ² of the context responses' noise.
        shared_beta: one β for all tasks (the text) or an independent β_n per task (the code).
        beta_var: prior variance of each coordinate of β (default 1/d, the text's N(0, I_d/d)).
        query_noise: the query responses carry noise σ² too (the text) or are noise-free (the code).
        data_seed: seed of the training batches; batch k is a pure function of (data_seed, k).
    """

    kind: ClassVar[str] = "multitask_regression"
    losses: ClassVar[tuple[str, ...]] = ("query",)

    dim: int
    supports: Sequence[Sequence[int]] = PAPER_SUPPORTS
    context: int = 40
    noise: float = 0.1
    shared_beta: bool = True
    beta_var: float | None = None
    query_noise: bool = True
    data_seed: int = 0

    def __post_init__(self) -> None:
        d = check.positive_int("dim", self.dim)
        check.positive_int("context", self.context)
        check.nonnegative_float("noise", self.noise)
        if self.beta_var is not None:
            check.positive_float("beta_var", self.beta_var)
        if not self.supports:
            raise ValueError("supports must list at least one task's coordinates")
        for n, s in enumerate(self.supports):
            idx = list(s)
            if not idx or len(set(idx)) != len(idx) or not all(0 <= int(i) < d for i in idx):
                raise ValueError(f"supports[{n}] must be distinct coordinates in 0..{d - 1} "
                                 f"(0-based); got {s!r}")
        object.__setattr__(self, "supports", tuple(tuple(int(i) for i in s) for s in self.supports))

    @property
    def outputs(self) -> int:
        """The number of tasks N."""
        return len(self.supports)

    @property
    def sequence_size(self) -> int:
        return (self.context + 1) * (self.dim + self.outputs)

    @cached_property
    def support_mask(self) -> np.ndarray:
        """`[N, d]` 1.0 on S_n."""
        m = np.zeros((self.outputs, self.dim))
        for n, s in enumerate(self.supports):
            m[n, list(s)] = 1.0
        return m

    @property
    def prior_var(self) -> float:
        return 1.0 / self.dim if self.beta_var is None else float(self.beta_var)

    def with_context(self, context: int) -> MultiTaskRegression:
        """The same distribution (seeds included) at another context length (spec §2.4)."""
        return dataclasses.replace(self, context=context)

    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> MultiTaskBatch:
        """Batch number `step` of the training stream: a pure function of (data_seed, step)."""
        check.positive_int("batch_size", batch_size)
        return self._draw(batch_size, _generator(self.data_seed, step, _STREAM_BATCH), dtype,
                          device)

    def _draw(self, b: int, g: torch.Generator, dtype: torch.dtype, device) -> MultiTaskBatch:
        d, n_tasks, L = self.dim, self.outputs, self.context
        f64 = torch.float64
        x = torch.randn(b, L + 1, d, generator=g, dtype=f64)
        shape = (b, 1, d) if self.shared_beta else (b, n_tasks, d)
        beta = torch.randn(shape, generator=g, dtype=f64) * np.sqrt(self.prior_var)
        beta = beta * torch.from_numpy(self.support_mask)                     # [B, N, d]
        eps = torch.randn(b, L + 1, n_tasks, generator=g, dtype=f64) * np.sqrt(self.noise)
        if not self.query_noise:
            eps[:, L] = 0.0
        y = torch.einsum("bld,bnd->bln", x, beta) + eps
        to = {"dtype": dtype, "device": device}
        return MultiTaskBatch(x[:, :L].to(**to), y[:, :L].to(**to), x[:, L].to(**to),
                              y[:, L].to(**to), beta.to(**to),
                              torch.full((b,), L, dtype=torch.int64, device=device))

    def loss(self, model: torch.nn.Module, batch: MultiTaskBatch, name: str = "query"
             ) -> torch.Tensor:
        """Mean over prompts and tasks of (y_q,n − ŷ_q,n)² (the authors' nn.MSELoss)."""
        if name not in self.losses:
            raise ValueError(f"loss={name!r} is unknown for {self.kind}; choose one of {self.losses}")
        return ((batch.y_q - model(batch.x, batch.y, batch.x_q, lengths=batch.lengths)) ** 2).mean()

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> MultiTaskBatch:
        """A finite set of `size` prompts drawn from `seed` (no whitening for this family)."""
        check.positive_int("size", size)
        if whiten:
            raise ValueError("whiten is not defined for multitask_regression; pass whiten=False")
        return self._draw(size, _generator(seed, 0, _STREAM_DATASET), dtype, device)

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, MultiTaskBatch]:
        return {"in_context": self.fixed_dataset(size, seed, dtype=dtype, device=device)}
