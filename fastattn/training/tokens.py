"""Training of token transformers (`fastattn.models.Transformer`) with AdamW, recording held-out
metrics and the per-head QK / OV factors at log-spaced steps, for the spectral measures of
Mainali & Teixeira 2025 (spec §8, §9.6–9.8).

The task gives `batches(...)` (step → batch, a pure function of the step), `loss(model, batch)` and
`evaluator()` (model → {name: float}); see `fastattn.tasks.tokens`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fastattn import _validate as check
from fastattn.models.transformer import ov_factors, qk_factors
from fastattn.training.flow import record_steps
from fastattn.training.trainer import diverged


@dataclass(frozen=True)
class TokenTrainConfig:
    """AdamW (decoupled weight decay) with a linear warm-up of `warmup` steps.

    Attributes:
        steps: optimiser steps (epochs, for a full-batch task). lr, weight_decay, betas: AdamW's.
        n_records: about this many log-spaced steps (0 and `steps` included) at which the metrics
            and the QK / OV factors are recorded.
        stop: name and threshold (metric ≥ threshold, e.g. ("test_acc", 0.999)) that stop the run
            early, checked at the record steps; `patience` more record steps are taken after it.
        max_seconds: stop at the first record step after this much wall time (status "time").
        threads: torch intra-op threads during training (restored afterwards).
    """

    steps: int
    lr: float = 1e-3
    weight_decay: float = 1.0
    betas: tuple[float, float] = (0.9, 0.98)
    warmup: int = 10
    n_records: int = 200
    stop: tuple[str, float] | None = None
    patience: int = 0
    max_seconds: float | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        check.positive_int("steps", self.steps)
        check.positive_float("lr", self.lr)
        check.nonnegative_float("weight_decay", self.weight_decay)
        check.positive_int("n_records", self.n_records)
        check.positive_int("threads", self.threads)


@dataclass
class TokenRun:
    """A finished run. step `[R]`; metrics: name → `[R]`; factors: "W_Q", "W_K", "W_V", "W_O^T" →
    `[R, L, H, d, d_head]` float32 (QK = W_Q W_Kᵀ, OV = W_V (W_Oᵀ)ᵀ); status: "steps", "stop",
    "time" or "diverged"; wall_time in seconds (training and recording)."""

    step: np.ndarray
    metrics: dict[str, np.ndarray]
    factors: dict[str, np.ndarray]
    status: str
    wall_time: float
    config: dict[str, Any] = field(default_factory=dict)

    def matrices(self, kind: str) -> np.ndarray:
        """Per-head "qk" or "ov" matrices over the records, float64 `[R, L, H, d, d]`."""
        pairs = {"qk": ("W_Q", "W_K"), "ov": ("W_V", "W_O^T")}
        if kind not in pairs:
            raise ValueError(f"kind must be 'qk' or 'ov'; got {kind!r}")
        x, y = (self.factors[n].astype(np.float64) for n in pairs[kind])
        return x @ np.swapaxes(y, -1, -2)


def train_tokens(model: torch.nn.Module, loss: Callable[[torch.nn.Module, Any], torch.Tensor],
                 batches: Callable[[int], Any], evaluate: Callable[[torch.nn.Module], dict[str, float]],
                 cfg: TokenTrainConfig, log: Callable[[str], None] | None = None) -> TokenRun:
    """Train `model` in place: `cfg.steps` AdamW steps on `loss(model, batches(step))`."""
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                            betas=cfg.betas)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / max(cfg.warmup, 1)))
    rec = set(record_steps(cfg.steps, cfg.n_records).tolist())
    steps: list[int] = []
    metrics: dict[str, list[float]] = {}
    factors: dict[str, list[np.ndarray]] = {n: [] for n in ("W_Q", "W_K", "W_V", "W_O^T")}
    status, start, stop_at, loss0 = "steps", time.perf_counter(), None, math.nan

    def record(k: int) -> None:
        model.eval()
        with torch.no_grad():
            values = evaluate(model)
        model.train()
        steps.append(k)
        for name, v in values.items():
            metrics.setdefault(name, []).append(v)
        for name, arr in zip(factors, (*qk_factors(model), *ov_factors(model)), strict=True):
            factors[name].append(arr.astype(np.float32))
        if log is not None:
            log(f"step {k} {time.perf_counter() - start:.1f}s " +
                " ".join(f"{n}={v:.4g}" for n, v in values.items()))

    try:
        for k in range(cfg.steps + 1):
            if k in rec:
                record(k)
                if cfg.stop is not None and stop_at is None and metrics[cfg.stop[0]][-1] >= cfg.stop[1]:
                    stop_at = len(steps) + cfg.patience
                if stop_at is not None and len(steps) > stop_at - 1:
                    status = "stop"
                    break
                if cfg.max_seconds is not None and time.perf_counter() - start > cfg.max_seconds:
                    status = "time"
                    break
            if k == cfg.steps:
                break
            value = loss(model, batches(k))
            loss0 = value.item() if k == 0 else loss0
            if diverged(value.item(), loss0):
                status = "diverged"
                break
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            sched.step()
    finally:
        torch.set_num_threads(previous_threads)
    return TokenRun(np.asarray(steps), {n: np.asarray(v) for n, v in metrics.items()},
                    {n: np.stack(v) for n, v in factors.items()}, status,
                    time.perf_counter() - start)
