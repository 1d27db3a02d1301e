"""Vector in-context regression with tasks sharing the input covariance's eigenbasis (Mainali &
Teixeira 2025 §2.2–2.3; spec docs/mainali2025.md).

Inputs x ~ N(0, Σ_x), Σ_x = U S Uᵀ with S = diag(s); a task is W = U Λ Uᵀ, Λ = diag(λ) with λ ~ N(0, I)
i.i.d., and labels are y = W x (vectors, no noise). Either P tasks are drawn once from `task_seed`
and kept (the paper's quenched task set, optionally centred and whitened per mode), or every
sequence draws a fresh task (`tasks=None`). Sampling works in the eigenbasis (x̄ = √s ∘ ε,
ȳ = λ ∘ x̄) and rotates once: x = U x̄.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
import torch

from fastattn import _validate as check
from fastattn.tasks.base import register_task
from fastattn.tasks.haar import haar_frame
from fastattn.tasks.linear_regression import _generator
from fastattn.tasks.spectra import spectrum as named_spectrum

# Separate random streams: the task set and the eigenbasis never change with the batch stream.
_STREAM_BATCH, _STREAM_DATASET, _STREAM_TASKS, _STREAM_ROTATION, _STREAM_TEST = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class VectorBatch:
    """Sequences of one or several tasks (original basis).

    Attributes:
        x: `[B, N, d]` context inputs. y: `[B, N, d]` their labels W x. x_q: `[B, d]` query.
        y_q: `[B, d]` its label. task_eigs: `[B, d]` λ of each sequence's task (W = U diag(λ) Uᵀ).
    """

    x: torch.Tensor
    y: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor
    task_eigs: torch.Tensor

    def __len__(self) -> int:
        return int(self.x.shape[0])


def haar_orthogonal(dim: int, seed: int) -> np.ndarray:
    """A Haar-random orthogonal matrix `[dim, dim]` drawn from `seed` (`fastattn.tasks.haar`)."""
    g = np.random.default_rng(np.random.SeedSequence([int(seed), _STREAM_ROTATION]))
    return haar_frame(g.standard_normal((dim, dim)))


@register_task
@dataclass(frozen=True)
class WishartTasks:
    """Vector in-context regression with U-aligned tasks (kind "wishart_tasks").

    Args:
        dim: d, the input and output dimension (tokens are D = 2d).
        spectrum: s, the eigenvalues of Σ_x: a name or "v1,v2,..." (fastattn.tasks.spectrum; named
            spectra have trace 1); None: s = 1 (Σ_x = I). C0 of the spec is "2,1,0.5,0.25".
        context: N, the number of context pairs.
        tasks: P, the size of the fixed task set; None (or "fresh"): a fresh task every sequence.
        center_tasks: subtract the task set's mean λ̄ (the null blocks p1, q2 then get no drive).
        whiten_tasks: rescale each mode so that (1/P) Σ_μ λ²_{μ,α} = 1 exactly (ω = 1).
        rotate: a Haar-random U from `rotation_seed` (else U = I).
        task_seed: seed of the task set. data_seed: seed of the batch stream.

    Sampled loss "query": ½ ‖ŷ − y_q‖² averaged over the batch (the paper's MSE includes the ½).
    """

    kind: ClassVar[str] = "wishart_tasks"
    losses: ClassVar[tuple[str, ...]] = ("query",)

    dim: int
    spectrum: str | None = None
    context: int = 32
    tasks: int | str | None = 64
    center_tasks: bool = False
    whiten_tasks: bool = False
    rotate: bool = True
    rotation_seed: int = 0
    task_seed: int = 0
    data_seed: int = 0

    def __post_init__(self) -> None:
        check.positive_int("dim", self.dim)
        check.positive_int("context", self.context)
        if self.tasks == "fresh":
            object.__setattr__(self, "tasks", None)
        if self.tasks is not None:
            check.positive_int("tasks", self.tasks)
            if (self.center_tasks or self.whiten_tasks) and self.tasks < 2:
                raise ValueError("center_tasks / whiten_tasks need tasks >= 2")
        elif self.center_tasks or self.whiten_tasks:
            raise ValueError("center_tasks / whiten_tasks act on a fixed task set; with tasks=None "
                             "(fresh tasks) the task moments are already exact")
        s = self.s
        if np.any(s <= 0):
            raise ValueError(f"spectrum must be positive; got {self.spectrum!r}")

    # ------------------------------------------------------------------ distribution
    @cached_property
    def s(self) -> np.ndarray:
        """The input spectrum s `[d]`, descending."""
        if self.spectrum is None:
            return np.ones(self.dim)
        return named_spectrum(str(self.spectrum), self.dim)

    @cached_property
    def U(self) -> np.ndarray:
        """The shared eigenbasis `[d, d]` (columns): Σ_x = U diag(s) Uᵀ."""
        return haar_orthogonal(self.dim, self.rotation_seed) if self.rotate else np.eye(self.dim)

    @cached_property
    def task_eigs(self) -> np.ndarray | None:
        """λ of the fixed task set `[P, d]` (after centring / whitening), or None for fresh tasks."""
        if self.tasks is None:
            return None
        g = np.random.default_rng(np.random.SeedSequence([int(self.task_seed), _STREAM_TASKS]))
        lam = g.standard_normal((self.tasks, self.dim))
        if self.center_tasks:
            lam = lam - lam.mean(0)
        if self.whiten_tasks:
            lam = lam / np.sqrt((lam**2).mean(0))
        return lam

    @property
    def sequence_size(self) -> int:
        return (self.context + 1) * 2 * self.dim

    def omega(self) -> np.ndarray:
        """Ω = E_μ[λ λᵀ] `[d, d]`: (1/P) Σ_μ λ_μ λ_μᵀ for a fixed set, I for fresh tasks."""
        lam = self.task_eigs
        return np.eye(self.dim) if lam is None else lam.T @ lam / lam.shape[0]

    def task_stats(self) -> dict[str, list]:
        """The quenched task statistics to log with a run: ω `[d]` (diag Ω), Ω `[d, d]`, λ̄ `[d]`."""
        lam = self.task_eigs
        mean = np.zeros(self.dim) if lam is None else lam.mean(0)
        om = self.omega()
        return {"omega_diag": np.diag(om).tolist(), "omega": om.tolist(), "task_mean": mean.tolist()}

    def task_matrix(self, mu: int) -> np.ndarray:
        """W^μ = U diag(λ_μ) Uᵀ `[d, d]` of the fixed task set."""
        if self.task_eigs is None:
            raise ValueError("task_matrix needs a fixed task set (tasks=P); this task draws fresh tasks")
        return (self.U * self.task_eigs[mu]) @ self.U.T

    # ------------------------------------------------------------------ sampling
    def _draw(self, eigs: torch.Tensor, g: torch.Generator, dtype: torch.dtype,
              device: str | torch.device) -> VectorBatch:
        b, n, d = eigs.shape[0], self.context, self.dim
        root = torch.as_tensor(np.sqrt(self.s), dtype=torch.float64)
        xb = torch.randn(b, n + 1, d, generator=g, dtype=torch.float64) * root        # x̄ rows
        yb = xb * eigs[:, None, :]                                                    # ȳ = λ ∘ x̄
        u = torch.as_tensor(self.U, dtype=torch.float64)
        x, y = xb @ u.T, yb @ u.T                                                     # x = U x̄
        out = (x[:, :n], y[:, :n], x[:, n], y[:, n], eigs)
        return VectorBatch(*(t.to(dtype=dtype, device=device) for t in out))

    def _task_eigs_for(self, index: torch.Tensor | None, batch_size: int,
                       g: torch.Generator) -> torch.Tensor:
        if self.task_eigs is None:
            return torch.randn(batch_size, self.dim, generator=g, dtype=torch.float64)
        lam = torch.as_tensor(self.task_eigs, dtype=torch.float64)
        if index is None:
            index = torch.randint(lam.shape[0], (batch_size,), generator=g)
        return lam[index]

    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> VectorBatch:
        """Batch `step`: each sequence of a task drawn uniformly from the set (or fresh)."""
        check.positive_int("batch_size", batch_size)
        g = _generator(self.data_seed, step, _STREAM_BATCH)
        return self._draw(self._task_eigs_for(None, batch_size, g), g, dtype, device)

    def sample_task(self, mu: int, batch_size: int, step: int = 0, *,
                    dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu"
                    ) -> VectorBatch:
        """Batch `step` of fresh contexts for task μ of the set (task-centric SGD); with fresh
        tasks, one new task for the whole batch. A pure function of (data_seed, step)."""
        check.positive_int("batch_size", batch_size)
        g = _generator(self.data_seed, step, _STREAM_BATCH)
        if self.task_eigs is None:
            eigs = torch.randn(1, self.dim, generator=g, dtype=torch.float64).expand(batch_size, -1)
        else:
            if not 0 <= mu < self.tasks:
                raise ValueError(f"task index mu={mu} is outside the task set [0, {self.tasks})")
            eigs = torch.as_tensor(self.task_eigs[mu], dtype=torch.float64).expand(batch_size, -1)
        return self._draw(eigs.contiguous(), g, dtype, device)

    def loss(self, model: torch.nn.Module, batch: VectorBatch, name: str = "query") -> torch.Tensor:
        """½ ‖ŷ − y_q‖² averaged over the batch (scalar)."""
        if name != "query":
            raise ValueError(f"loss={name!r} is unknown for wishart_tasks; it has {self.losses}")
        r = model(batch.x, batch.y, batch.x_q) - batch.y_q
        return 0.5 * (r * r).sum(-1).mean()

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> VectorBatch:
        """`size` sequences drawn once from `seed` (tasks from the set, or fresh)."""
        if whiten:
            raise ValueError("wishart_tasks has no data-set whitening; whiten the task set with "
                             "whiten_tasks=True")
        check.positive_int("size", size)
        g = _generator(seed, 0, _STREAM_DATASET)
        return self._draw(self._task_eigs_for(None, size, g), g, dtype, device)

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, VectorBatch]:
        """"train_tasks": fresh contexts of the fixed tasks; "fresh_tasks": unseen tasks."""
        check.positive_int("size", size)
        g = _generator(seed, 0, _STREAM_TEST)
        fresh = self._draw(torch.randn(size, self.dim, generator=g, dtype=torch.float64), g, dtype,
                           device)
        if self.task_eigs is None:
            return {"fresh_tasks": fresh}
        return {"train_tasks": self._draw(self._task_eigs_for(None, size, g), g, dtype, device),
                "fresh_tasks": fresh}
