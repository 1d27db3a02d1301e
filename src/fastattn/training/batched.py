"""R independent sampled runs of `MultiHeadSoftmax` trained in one process (He et al. 2025 §3).

Parameters and Adam states are laid out `[R, ...]` (wq, wk, wv `[R, H, D, D]`, wo `[R, H, D]`); each
step draws every run's batch from its own task (`task.sample(B, step)`, the stream `train()` uses),
and runs one fused forward + backward (the gradient written out, not taped by autograd) and one Adam
update for all R runs at once. Every run is bit-identical to the same run trained alone
(R = 1) and equal to `train(model, task, method="adam")` up to rounding (tests/training/test_batched.py).

The gradient of L = mean_b (ŷ_b − y_b)² (spec §7.1): with e_b = 2(ŷ_b − y_b)/B, per head h,
a_bh = Σ_ℓ p_bhℓ z_bℓ, v_bhℓ = OV_h · z_bℓ:
    ∂L/∂OV_h = Σ_b e_b a_bh,     ∂L/∂KQ_h = Σ_b (Σ_ℓ e_b p_bhℓ (v_bhℓ − OV_h·a_bh) z_bℓ) z_qbᵀ,
then chained to the factors of KQ_h = W_K^hᵀ W_Q^h/√D and OV_h = W_O^h W_V^h.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from fastattn import _validate as check
from fastattn.models.multihead_softmax import MultiHeadSoftmax
from fastattn.tasks.linear_regression import _factor

NAMES = ("wq", "wk", "wv", "wo")
STREAMS = ("task", "fast")


@dataclass(frozen=True)
class BatchedAdamConfig:
    """Adam (torch.optim.Adam's update, no weight decay) on fresh batches every step.

    Attributes:
        lr: learning rate. steps: optimiser steps. batch_size: prompts per step and run.
        betas, eps: Adam's. record_every: record each run's training loss every this many steps
            (and at the last step).
        stream: "task" (batch k = `task.sample(B, k)`, the stream `train()` sees) or "fast" (each
            run draws from its own torch.Generator seeded by its task's data_seed, in the model's
            dtype, without the task's per-batch seeding and float64 draws: same distribution,
            other bits, several times cheaper).
    """

    lr: float = 1e-3
    steps: int = 1000
    batch_size: int = 256
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    record_every: int = 100
    stream: str = "task"

    def __post_init__(self) -> None:
        if self.stream not in STREAMS:
            raise ValueError(f"stream must be one of {STREAMS}; got {self.stream!r}")
        check.positive_float("lr", self.lr)
        check.positive_int("steps", self.steps)
        check.positive_int("batch_size", self.batch_size)
        check.positive_int("record_every", self.record_every)


@dataclass
class BatchedState:
    """Parameters and Adam moments of R runs: dicts name → `[R, ...]` tensors; `step` taken."""

    params: dict[str, torch.Tensor]
    exp_avg: dict[str, torch.Tensor]
    exp_avg_sq: dict[str, torch.Tensor]
    step: int = 0

    @classmethod
    def of(cls, models: Sequence[MultiHeadSoftmax]) -> BatchedState:
        params = {n: torch.stack([getattr(m, n).detach() for m in models]).clone() for n in NAMES}
        zeros = {n: torch.zeros_like(p) for n, p in params.items()}
        return cls(params, zeros, {n: torch.zeros_like(p) for n, p in params.items()})

    def load_into(self, models: Sequence[MultiHeadSoftmax]) -> None:
        """Copy run r's parameters into models[r]."""
        with torch.no_grad():
            for r, m in enumerate(models):
                for n in NAMES:
                    getattr(m, n).copy_(self.params[n][r])


@dataclass
class BatchedResult:
    """steps `[T]` and losses `[R, T]` (each run's training loss on its batch), the final state."""

    steps: np.ndarray
    losses: np.ndarray
    state: BatchedState
    extras: dict = field(default_factory=dict)


def loss_and_grad(params: dict[str, torch.Tensor], z: torch.Tensor, z_q: torch.Tensor,
                  y_q: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Each run's loss `[R]` and gradients (name → `[R, ...]`) for tokens z `[R, B, L, D]`,
    queries z_q `[R, B, D]`, targets y_q `[R, B]`."""
    wq, wk, wv, wo = (params[n] for n in NAMES)
    s = math.sqrt(z.shape[-1])
    kq = wk.transpose(-1, -2) @ wq / s                                     # [R, H, D, D]
    ov = torch.einsum("rhi,rhij->rhj", wo, wv)                             # [R, H, D]
    u = torch.einsum("rhij,rbj->rbhi", kq, z_q)                            # [R, B, H, D]
    p = torch.softmax(torch.einsum("rbld,rbhd->rbhl", z, u), -1)          # [R, B, H, L]
    a = torch.einsum("rbhl,rbld->rbhd", p, z)                              # [R, B, H, D]
    head = torch.einsum("rhd,rbhd->rbh", ov, a)                            # [R, B, H]
    err = head.sum(-1) - y_q                                               # [R, B]
    loss = (err * err).mean(-1)
    e = err * (2.0 / err.shape[-1])
    d_ov = torch.einsum("rb,rbhd->rhd", e, a)
    v = torch.einsum("rhd,rbld->rbhl", ov, z)                              # [R, B, H, L]
    d_logit = p * (v - head[..., None]) * e[:, :, None, None]
    d_u = torch.einsum("rbhl,rbld->rbhd", d_logit, z)
    d_kq = torch.einsum("rbhi,rbj->rhij", d_u, z_q)                        # [R, H, D, D]
    grads = {"wq": wk @ d_kq / s, "wk": wq @ d_kq.transpose(-1, -2) / s,
             "wv": wo[..., :, None] * d_ov[..., None, :],
             "wo": torch.einsum("rhij,rhj->rhi", wv, d_ov)}
    return loss, grads


def adam_update(state: BatchedState, grads: dict[str, torch.Tensor], cfg: BatchedAdamConfig
                ) -> None:
    """One Adam step in place (torch.optim.Adam's formula, single-tensor path)."""
    state.step += 1
    b1, b2 = cfg.betas
    bias1 = 1 - b1 ** state.step
    bias2_sqrt = math.sqrt(1 - b2 ** state.step)
    step_size = cfg.lr / bias1
    for n, g in grads.items():
        m, v = state.exp_avg[n], state.exp_avg_sq[n]
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / bias2_sqrt).add_(cfg.eps)
        state.params[n].addcdiv_(m, denom, value=-step_size)


class FastStream:
    """A run's training prompts drawn straight into tokens: x ~ N(0, Λ), w ~ N(0, Σ_w), label noise
    σ² on context and query (the task's distribution; zero task mean, no fixed-task fraction)."""

    def __init__(self, task, dtype: torch.dtype):
        if task.fixed_task_fraction > 0 or np.any(task.w_mean_vector != 0):
            raise ValueError("stream='fast' needs a zero task mean and fixed_task_fraction=0; use "
                             "stream='task'")
        self.g = torch.Generator().manual_seed(int(task.data_seed))
        self.dtype, self.L, self.d = dtype, task.max_context, task.dim
        self.x_factor = _factor_or_none(task.cov_matrix, dtype)
        self.w_factor = torch.from_numpy(_factor(task.w_cov_matrix)).to(dtype)
        self.noise_std = float(np.sqrt(task.noise))

    def draw(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """z `[B, L, D]`, z_q `[B, D]`, y_q `[B]`."""
        to = {"generator": self.g, "dtype": self.dtype}
        x = torch.randn(batch_size, self.L + 1, self.d, **to)
        if self.x_factor is not None:
            x = x @ self.x_factor.T
        w = torch.randn(batch_size, self.d, **to) @ self.w_factor.T
        y = (x @ w[:, :, None])[..., 0] + self.noise_std * torch.randn(batch_size, self.L + 1, **to)
        z = torch.cat([x[:, :-1], y[:, :-1, None]], -1)
        z_q = torch.cat([x[:, -1], torch.zeros_like(y[:, -1:])], -1)
        return z, z_q, y[:, -1]


def _factor_or_none(cov: np.ndarray, dtype: torch.dtype) -> torch.Tensor | None:
    """F with F Fᵀ = cov, or None for the identity (no multiply)."""
    if np.array_equal(cov, np.eye(len(cov))):
        return None
    return torch.from_numpy(_factor(cov)).to(dtype)


def batch_tokens(tasks: Sequence, batch_size: int, step: int, dtype: torch.dtype):
    """Tokens z `[R, B, L, D]`, z_q `[R, B, D]`, y_q `[R, B]` of every run's batch `step`."""
    zs, zqs, yqs = [], [], []
    for task in tasks:
        b = task.sample(batch_size, step, dtype=dtype)
        zs.append(torch.cat([b.x, b.y[..., None]], -1))
        zqs.append(torch.cat([b.x_q, torch.zeros_like(b.x_q[:, :1])], -1))
        yqs.append(b.y_q)
    return torch.stack(zs), torch.stack(zqs), torch.stack(yqs)


def train_batched(models: Sequence[MultiHeadSoftmax], tasks: Sequence, cfg: BatchedAdamConfig
                  ) -> BatchedResult:
    """Train models[r] on tasks[r] (fixed-length linear regression tasks) for `cfg.steps` Adam
    steps, all R runs at once; the models are updated in place and returned in the result's state.

    The models must share dim, heads, dtype and the softmax activation; each run keeps its own
    initialisation and data seed."""
    if len(models) != len(tasks) or not models:
        raise ValueError(f"models and tasks must be equally long and non-empty; got {len(models)} "
                         f"models and {len(tasks)} tasks")
    first = models[0].config
    for m in models:
        if not isinstance(m, MultiHeadSoftmax) or m.config.activation != "exp":
            raise ValueError("train_batched trains MultiHeadSoftmax models with activation='exp'")
        if (m.config.dim, m.config.heads, m.config.dtype) != (first.dim, first.heads, first.dtype):
            raise ValueError("train_batched needs one (dim, heads, dtype) for all runs; group the "
                             "runs by heads and call it once per group")
    for t in tasks:
        if t.dim != first.dim or len(t.context_lengths) != 1:
            raise ValueError(f"every task must have dim={first.dim} and one fixed context length")
    dtype = first.torch_dtype
    state = BatchedState.of(models)
    steps, losses = [], []
    streams = [FastStream(t, dtype) for t in tasks] if cfg.stream == "fast" else None
    for k in range(cfg.steps):
        if streams is None:
            z, z_q, y_q = batch_tokens(tasks, cfg.batch_size, k, dtype)
        else:
            z, z_q, y_q = (torch.stack(t) for t in zip(*(s.draw(cfg.batch_size) for s in streams),
                                                        strict=True))
        loss, grads = loss_and_grad(state.params, z, z_q, y_q)
        if k % cfg.record_every == 0 or k == cfg.steps - 1:
            steps.append(k)
            losses.append(loss.double().numpy().copy())
        adam_update(state, grads, cfg)
    state.load_into(models)
    return BatchedResult(np.asarray(steps), np.stack(losses, 1), state)
