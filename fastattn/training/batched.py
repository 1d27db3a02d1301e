"""R independent sampled runs of `MultiHeadSoftmax` trained in one process (He et al. 2025 §3).

Parameters and Adam states are laid out `[R, P]` (per run wq, wk, wv `[H, D, D]`, wo `[H, D]`
concatenated; the dicts of `BatchedState` are views `[R, ...]` of that buffer). Two data streams:

- "task": run r's batch k is `tasks[r].sample(B, k)`, the stream `train()` uses; each step is one
  forward + backward written out in torch ops (no autograd tape) and one Adam update for all runs.
  Equal to `train(model, task, method="adam")` up to rounding.
- "fast": run r's batch k is a pure function of (tasks[r].data_seed, k), drawn from a counter-based
  generator (Philox4x32-10, docs/conventions.md "He 2025 fast stream"), independent of R and of
  the batch's position among the runs. Its step is fused in the C++ core
  (`fastattn._core.he_adam_steps`: data generation, forward, backward, batch reduction and Adam in
  one call for many steps, threads over runs or over chunks of 16 prompts).

Every run is bit-identical to the same run trained alone (tests/training/test_batched.py).

The gradient of L = mean_b (ŷ_b − y_b)² (spec §7.1): with e_b = 2(ŷ_b − y_b)/B, per head h,
a_bh = Σ_ℓ p_bhℓ z_bℓ, v_bhℓ = OV_h · z_bℓ:
    ∂L/∂OV_h = Σ_b e_b a_bh,     ∂L/∂KQ_h = Σ_b (Σ_ℓ e_b p_bhℓ (v_bhℓ − OV_h·a_bh) z_bℓ) z_qbᵀ,
then chained to the factors of KQ_h = W_K^hᵀ W_Q^h/√D and OV_h = W_O^h W_V^h.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from fastattn import _validate as check
from fastattn._core_loader import core
from fastattn.models.multihead_softmax import MultiHeadSoftmax
from fastattn.ops._dispatch import BackendUnavailableError
from fastattn.tasks.linear_regression import _factor

NAMES = ("wq", "wk", "wv", "wo")
STREAMS = ("task", "fast")
BACKENDS = ("auto", "fused", "torch")
# steps per call into the C++ core: progress is reported (and Ctrl-C seen) between calls
_SEGMENT = 5000


@dataclass(frozen=True)
class BatchedAdamConfig:
    """Adam (torch.optim.Adam's update, no weight decay) on fresh batches every step.

    Attributes:
        lr: learning rate. steps: optimiser steps. batch_size: prompts per step and run.
        betas, eps: Adam's. record_every: record each run's training loss every this many steps
            (and at the last step).
        stream: "task" (batch k = `task.sample(B, k)`, the stream `train()` sees) or "fast" (batch
            k a pure function of (task.data_seed, k) from the counter-based generator of
            docs/conventions.md: same distribution, other bits, far cheaper).
        backend: "fused" (the C++ step; stream "fast" only), "torch" (the written-out torch step)
            or "auto" (fused where it applies; `BatchedResult.extras["fallback"]` says why not).
        threads: threads of the fused step (None: torch.get_num_threads()).
    """

    lr: float = 1e-3
    steps: int = 1000
    batch_size: int = 256
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    record_every: int = 100
    stream: str = "task"
    backend: str = "auto"
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.stream not in STREAMS:
            raise ValueError(f"stream must be one of {STREAMS}; got {self.stream!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}; got {self.backend!r}")
        if self.threads is not None:
            check.positive_int("threads", self.threads)
        check.positive_float("lr", self.lr)
        check.positive_int("steps", self.steps)
        check.positive_int("batch_size", self.batch_size)
        check.positive_int("record_every", self.record_every)


@dataclass
class BatchedState:
    """Parameters and Adam moments of R runs of H heads: flat buffers `[R, P]` (`theta`, `m`, `v`;
    P = 3 H D² + H D) and, as views of them, dicts name → `[R, ...]`; `step` Adam steps taken."""

    theta: torch.Tensor
    m: torch.Tensor
    v: torch.Tensor
    heads: int
    step: int = 0
    params: dict[str, torch.Tensor] = field(init=False)
    exp_avg: dict[str, torch.Tensor] = field(init=False)
    exp_avg_sq: dict[str, torch.Tensor] = field(init=False)

    def __post_init__(self) -> None:
        self.params, self.exp_avg, self.exp_avg_sq = (_views(b, self.heads)
                                                      for b in (self.theta, self.m, self.v))

    @classmethod
    def of(cls, models: Sequence[MultiHeadSoftmax]) -> BatchedState:
        theta = torch.stack([torch.cat([getattr(m, n).detach().reshape(-1) for n in NAMES])
                             for m in models])
        return cls(theta, torch.zeros_like(theta), torch.zeros_like(theta), models[0].config.heads)

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


def _views(flat: torch.Tensor, heads: int) -> dict[str, torch.Tensor]:
    """wq, wk, wv `[R, H, D, D]` and wo `[R, H, D]` as views of a flat `[R, P]` buffer."""
    r, p = flat.shape
    dim = round((math.sqrt(1 + 12 * p / heads) - 1) / 6)  # P = H D (3 D + 1)
    sizes = [heads * dim * dim] * 3 + [heads * dim]
    parts = torch.split(flat, sizes, dim=1)
    shapes = [(r, heads, dim, dim)] * 3 + [(r, heads, dim)]
    return {n: t.view(shape) for n, t, shape in zip(NAMES, parts, shapes, strict=True)}


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


def adam_update(state: BatchedState, grads: dict[str, torch.Tensor], cfg: BatchedAdamConfig,
                lrs: torch.Tensor | None = None) -> None:
    """One Adam step in place (torch.optim.Adam's formula, single-tensor path); `lrs` `[R]`: each
    run's learning rate (default cfg.lr for all)."""
    state.step += 1
    b1, b2 = cfg.betas
    bias1 = 1 - b1 ** state.step
    bias2_sqrt = math.sqrt(1 - b2 ** state.step)
    for n, g in grads.items():
        m, v = state.exp_avg[n], state.exp_avg_sq[n]
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / bias2_sqrt).add_(cfg.eps)
        if lrs is None:
            state.params[n].addcdiv_(m, denom, value=-cfg.lr / bias1)
        else:
            step_size = (lrs / bias1).to(g.dtype).view(-1, *[1] * (g.dim() - 1))
            state.params[n].sub_(step_size * (m / denom))


@dataclass(frozen=True)
class FastLaw:
    """The fast stream's law of one run: x = x_factor ε, w = w_factor ε, label noise std
    noise_std; the key of its counter-based generator is `seed` (the task's data_seed)."""

    seed: int
    x_factor: np.ndarray
    w_factor: np.ndarray
    noise_std: float

    @classmethod
    def of(cls, task) -> FastLaw:
        if task.fixed_task_fraction > 0 or np.any(task.w_mean_vector != 0):
            raise ValueError("stream='fast' needs a zero task mean and fixed_task_fraction=0; use "
                             "stream='task'")
        if int(task.data_seed) < 0:
            raise ValueError(f"stream='fast' needs a data_seed >= 0; got {task.data_seed}")
        x = task.cov_matrix
        # an isotropic Λ = c I (also a rotated one, c I up to rounding) has the factor √c I: the
        # same law as any other factor, and the fused step skips the d × d product
        c = float(np.mean(np.diag(x)))
        if not np.allclose(x, c * np.eye(len(x)), rtol=0, atol=1e-12 * c):
            x_factor = _factor(x)
        else:
            x_factor = (1.0 if abs(c - 1) <= 1e-12 else np.sqrt(c)) * np.eye(len(x))
        return cls(int(task.data_seed), x_factor, _factor(task.w_cov_matrix),
                   float(np.sqrt(task.noise)))


class FastStream:
    """A run's training prompts of the fast stream (tokens straight from the counter-based
    generator of the C++ core): batch k is a pure function of (task.data_seed, k)."""

    def __init__(self, task, dtype: torch.dtype):
        self.law, self.dtype = FastLaw.of(task), dtype
        self.L, self.d = task.max_context, task.dim

    def draw(self, batch_size: int, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Batch `step`: z `[B, L, D]`, z_q `[B, D]`, y_q `[B]`."""
        law = self.law
        out = core.he_sample(law.seed, step, dim=self.d, context=self.L, batch=batch_size,
                             x_factor=law.x_factor, w_factor=law.w_factor,
                             noise_std=law.noise_std, float64=self.dtype == torch.float64)
        return tuple(torch.from_numpy(a) for a in out)


def batch_tokens(tasks: Sequence, batch_size: int, step: int, dtype: torch.dtype):
    """Tokens z `[R, B, L, D]`, z_q `[R, B, D]`, y_q `[R, B]` of every run's batch `step`."""
    zs, zqs, yqs = [], [], []
    for task in tasks:
        b = task.sample(batch_size, step, dtype=dtype)
        zs.append(torch.cat([b.x, b.y[..., None]], -1))
        zqs.append(torch.cat([b.x_q, torch.zeros_like(b.x_q[:, :1])], -1))
        yqs.append(b.y_q)
    return torch.stack(zs), torch.stack(zqs), torch.stack(yqs)


def fused_unavailable(stream: str, dtype: torch.dtype) -> list[str]:
    """Every reason the fused C++ step cannot train these runs (empty: it can)."""
    reasons = []
    if stream != "fast":
        reasons.append(f"stream={stream!r}: the fused step draws its own data (stream='fast'); "
                       "the 'task' stream's batches come from task.sample in Python")
    if dtype not in (torch.float32, torch.float64):
        reasons.append(f"dtype {dtype} is not float32 or float64")
    return reasons


def train_batched(models: Sequence[MultiHeadSoftmax], tasks: Sequence, cfg: BatchedAdamConfig,
                  lrs: Sequence[float] | None = None,
                  progress: Callable[[int, np.ndarray], None] | None = None) -> BatchedResult:
    """Train models[r] on tasks[r] (fixed-length linear regression tasks) for `cfg.steps` Adam
    steps, all R runs at once; the models are updated in place and returned in the result's state.

    The models must share dim, heads, dtype and the softmax activation; each run keeps its own
    initialisation, data seed and learning rate (`lrs` `[R]`, default cfg.lr). `progress(steps
    done, last recorded losses [R])` is called every few thousand steps of the fused backend.
    `extras["backend"]` names the step that ran and `extras["fallback"]` why "auto" did not fuse.
    """
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
    if lrs is not None and len(lrs) != len(models):
        raise ValueError(f"lrs must give one learning rate per run ({len(models)}); got {len(lrs)}")
    for lr in lrs or ():
        check.positive_float("lrs", lr)
    dtype = first.torch_dtype
    state = BatchedState.of(models)
    record_at = np.array([k for k in range(cfg.steps)
                          if k % cfg.record_every == 0 or k == cfg.steps - 1], dtype=np.int64)
    reasons = fused_unavailable(cfg.stream, dtype) if cfg.backend != "torch" else ["backend='torch'"]
    if cfg.backend == "fused" and reasons:
        raise BackendUnavailableError("train_batched: backend 'fused' cannot train these runs: "
                                      + "; ".join(reasons) + ". Use backend='torch' or 'auto'.")
    if not reasons:
        losses = _train_fused(state, tasks, cfg, lrs, record_at, progress)
        extras = {"backend": "fused"}
    else:
        losses = _train_torch(state, tasks, cfg, lrs, record_at)
        extras = {"backend": "torch", "fallback": "; ".join(reasons)}
    state.load_into(models)
    return BatchedResult(record_at, losses, state, extras)


def _train_fused(state: BatchedState, tasks: Sequence, cfg: BatchedAdamConfig,
                 lrs: Sequence[float] | None, record_at: np.ndarray,
                 progress: Callable[[int, np.ndarray], None] | None) -> np.ndarray:
    """cfg.steps steps of the C++ fused step, in segments; losses `[R, len(record_at)]`."""
    laws = [FastLaw.of(t) for t in tasks]
    r = len(laws)
    seeds = np.array([law.seed for law in laws], dtype=np.uint64)
    lr = np.asarray(lrs if lrs is not None else [cfg.lr] * r, dtype=np.float64)
    x_factor = np.stack([law.x_factor for law in laws])
    w_factor = np.stack([law.w_factor for law in laws])
    noise_std = np.array([law.noise_std for law in laws])
    threads = cfg.threads or torch.get_num_threads()
    theta, m, v = (b.numpy() for b in (state.theta, state.m, state.v))
    losses = np.full((r, len(record_at)), np.nan)
    for start in range(0, cfg.steps, _SEGMENT):
        n = min(_SEGMENT, cfg.steps - start)
        sel = (record_at >= start) & (record_at < start + n)
        losses[:, sel] = core.he_adam_steps(
            theta, m, v, seeds=seeds, lr=lr, x_factor=x_factor, w_factor=w_factor,
            noise_std=noise_std, heads=state.heads,
            dim=tasks[0].dim, context=tasks[0].max_context, batch=cfg.batch_size,
            beta1=cfg.betas[0], beta2=cfg.betas[1], eps=cfg.eps, step0=state.step, n_steps=n,
            record_at=record_at[sel] - start, threads=threads)
        state.step += n
        if progress is not None:
            progress(state.step, losses[:, sel][:, -1] if sel.any() else losses[:, :0])
    return losses


def _train_torch(state: BatchedState, tasks: Sequence, cfg: BatchedAdamConfig,
                 lrs: Sequence[float] | None, record_at: np.ndarray) -> np.ndarray:
    """cfg.steps steps of the written-out torch step; losses `[R, len(record_at)]`."""
    dtype = state.theta.dtype
    lr = None if lrs is None else torch.tensor(lrs, dtype=torch.float64)
    streams = [FastStream(t, dtype) for t in tasks] if cfg.stream == "fast" else None
    recorded = set(record_at.tolist())
    losses = []
    for k in range(cfg.steps):
        if streams is None:
            z, z_q, y_q = batch_tokens(tasks, cfg.batch_size, k, dtype)
        else:
            z, z_q, y_q = (torch.stack(t) for t in zip(*(s.draw(cfg.batch_size, k)
                                                         for s in streams), strict=True))
        loss, grads = loss_and_grad(state.params, z, z_q, y_q)
        if k in recorded:
            losses.append(loss.double().numpy().copy())
        adam_update(state, grads, cfg, lr)
    return np.stack(losses, 1)
