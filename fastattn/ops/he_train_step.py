"""Fused Adam steps of R He et al. 2025 runs (spec §7.2 K1), with backend dispatch: the Triton
kernel (CUDA, or CPU under TRITON_INTERPRET=1), the C++ core (CPU) or the float64 torch reference.
Each run draws batch `step` of the fast stream keyed by its seed (docs/conventions.md)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from fastattn.ops._dispatch import select_backend
from fastattn.triton_kernels._launch import interpreting

__all__ = ["he_adam_step", "he_adam_steps"]


def he_adam_steps(theta: Tensor, m: Tensor, v: Tensor, seeds: Tensor, lr: Tensor,
                  x_factor: Tensor, w_factor: Tensor, noise_std: Tensor, heads: int, context: int,
                  batch: int, step0: int, n_steps: int, betas: tuple[float, float] = (0.9, 0.999),
                  eps: float = 1e-8, backend: str = "auto") -> Tensor:
    """Update theta, m, v `[R, P]` in place (P = 3 H D² + H D; per run wq, wk, wv `[H, D, D]`, wo
    `[H, D]` concatenated) by ``n_steps`` Adam steps on batches step0, step0 + 1, ... (step0 steps
    taken before); returns each run's batch loss at every step `[R, n_steps]`, before that step's
    update.

    seeds `[R]` (int, >= 0), lr and noise_std `[R]`, x_factor and w_factor `[R, d, d]` (x = F_x ε,
    w = F_w ε). backend: "auto" (Triton on CUDA, where the steps after the first replay a captured
    CUDA graph, or under the interpreter; else the C++ core), "triton", "cpp" or "reference".
    """
    r, p = theta.shape
    d = x_factor.shape[-1]
    dd = d + 1
    if p != 3 * heads * dd * dd + heads * dd:
        raise ValueError(f"theta must be [R, P] with P = 3 H D² + H D = {3 * heads * dd * dd + heads * dd}"
                         f" (H={heads}, D={dd}); got {tuple(theta.shape)}")
    for name, t in (("m", m), ("v", v)):
        if t.shape != theta.shape or t.dtype != theta.dtype or t.device != theta.device:
            raise ValueError(f"{name} must match theta (shape, dtype, device); got {tuple(t.shape)} "
                             f"{t.dtype} on {t.device}")
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1; got {n_steps}")
    if backend == "auto" and theta.device.type == "cpu" and not interpreting():
        backend = "cpp"
    backend = select_backend("he_adam_step", backend, theta.device, theta.dtype,
                             {"D": dd, "L": context})
    if backend == "triton":
        from fastattn.triton_kernels.he_train_step.kernel import he_adam_steps_triton

        return he_adam_steps_triton(theta, m, v, seeds.to(theta.device, torch.int64), lr,
                                    x_factor, w_factor, noise_std, heads, context, batch, step0,
                                    n_steps, betas, eps)
    if backend == "cpp":
        from fastattn._core_loader import core

        loss = core.he_adam_steps(
            theta.numpy(), m.numpy(), v.numpy(), seeds=seeds.numpy().astype(np.uint64),
            lr=lr.double().numpy(), x_factor=x_factor.double().numpy(),
            w_factor=w_factor.double().numpy(), noise_std=noise_std.double().numpy(), heads=heads,
            dim=d, context=context, batch=batch,
            beta1=betas[0], beta2=betas[1], eps=eps, step0=step0, n_steps=n_steps,
            record_at=np.arange(n_steps, dtype=np.int64), threads=torch.get_num_threads())
        return torch.from_numpy(loss).to(theta.dtype)
    from fastattn.triton_kernels.he_train_step.reference import (
        adam_step_reference,
        sample_reference,
    )

    losses = []
    for step in range(step0, step0 + n_steps):
        batches = [sample_reference(int(seeds[i]), step, batch, context, x_factor[i].cpu(),
                                    w_factor[i].cpu(), float(noise_std[i])) for i in range(r)]
        new = adam_step_reference(theta, m, v, heads, batches, step, lr.cpu(), betas, eps)
        for t, n in zip((theta, m, v), new[:3], strict=True):
            t.copy_(n)
        losses.append(new[3].to(theta.dtype))
    return torch.stack(losses, 1)


def he_adam_step(theta: Tensor, m: Tensor, v: Tensor, seeds: Tensor, lr: Tensor, x_factor: Tensor,
                 w_factor: Tensor, noise_std: Tensor, heads: int, context: int, batch: int,
                 step: int, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 backend: str = "auto") -> Tensor:
    """One Adam step (:func:`he_adam_steps` at n_steps = 1) on batch ``step``; returns each run's
    batch loss `[R]` before the update."""
    return he_adam_steps(theta, m, v, seeds, lr, x_factor, w_factor, noise_std, heads, context,
                         batch, step, 1, betas, eps, backend)[:, 0]
