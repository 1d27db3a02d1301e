"""He et al. 2025's fused Adam step on CUDA, many steps per call (the Triton kernels, steps after the
first replaying one captured CUDA graph), against the fused C++ step on one CPU core of the same
machine, same shapes (d = 5, L = 40, B = 256, float32). Skipped without a GPU; no timing asserts.

    pytest bench/test_he_step_gpu_bench.py -k cuda --benchmark-json he.json

test_cuda_he_steps: R runs of H = 8 heads, ``STEPS`` steps per call: device ms per step, run-steps
per second, and ``cpu_ratio``, the C++ step's time per run-step (one thread, R = 20, timed in the
same test) over the kernel's. test_cuda_e4_grid: the E4 grid's four calls (H = 1, 2, 4, 8, R = 5
each) at ``STEPS`` steps, and the projection to the paper's 5·10⁵ steps (``e4_projected_s``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from groups import label

import fastattn.ops as ops
from fastattn._core_loader import core

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA benchmarks need a GPU")
D, CONTEXT, BATCH = 5, 40, 256
STEPS = 256
E4_STEPS = 500_000


def _runs(runs: int, heads: int, device: str):
    dd = D + 1
    p = 3 * heads * dd * dd + heads * dd
    g = torch.Generator().manual_seed(0)
    theta = (0.1 * torch.randn(runs, p, generator=g)).to(device)
    eye = torch.eye(D).expand(runs, D, D).contiguous().to(device)
    law = dict(seeds=torch.arange(runs).to(device), lr=torch.full((runs,), 1e-3, device=device),
               x_factor=eye, w_factor=eye / D**0.5, noise_std=torch.zeros(runs, device=device))
    return theta, law


def _device_ms_per_step(runs: int, heads: int) -> float:
    """Device time of one call of STEPS steps (CUDA events, after a warm-up call), per step."""
    theta, law = _runs(runs, heads, "cuda")
    m, v = torch.zeros_like(theta), torch.zeros_like(theta)

    def call(step0: int) -> None:
        ops.he_adam_steps(theta, m, v, **law, heads=heads, context=CONTEXT, batch=BATCH,
                          step0=step0, n_steps=STEPS, backend="triton")

    call(0)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    call(STEPS)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / STEPS


def _cpu_ms_per_run_step(runs: int = 20, heads: int = 8, steps: int = 20) -> float:
    """The C++ fused step on one thread, per run-step (best of 3 calls)."""
    theta, law = _runs(runs, heads, "cpu")
    m, v = torch.zeros_like(theta), torch.zeros_like(theta)
    args = {k: t.double().numpy() for k, t in law.items() if k != "seeds"}
    best = float("inf")
    for rep in range(3):
        t0 = time.perf_counter()
        core.he_adam_steps(theta.numpy(), m.numpy(), v.numpy(),
                           seeds=law["seeds"].numpy().astype(np.uint64), **args, heads=heads,
                           dim=D, context=CONTEXT, batch=BATCH, beta1=0.9, beta2=0.999, eps=1e-8,
                           step0=rep * steps, n_steps=steps, record_at=np.array([0]), threads=1)
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best / (steps * runs)


@cuda
@pytest.mark.parametrize("runs", [20, 100, 1000])
def test_cuda_he_steps(benchmark, runs):
    heads = 8
    label(benchmark, "he_adam_steps", {"R": runs, "H": heads, "d": D, "L": CONTEXT, "B": BATCH},
          f"{STEPS} steps", "triton")
    benchmark.pedantic(lambda: _device_ms_per_step(runs, heads), rounds=1, iterations=1)
    ms = _device_ms_per_step(runs, heads)
    cpu = _cpu_ms_per_run_step()
    benchmark.extra_info.update({"device_ms_per_step": ms, "ms_per_run_step": ms / runs,
                                 "run_steps_per_s": runs / ms * 1e3,
                                 "cpu_ms_per_run_step": cpu, "cpu_ratio": cpu / (ms / runs),
                                 "device": torch.cuda.get_device_name(0)})


@cuda
def test_cuda_e4_grid(benchmark):
    label(benchmark, "he_e4_grid", {"H": 4, "R": 5, "d": D, "L": CONTEXT, "B": BATCH},
          f"{STEPS} steps", "triton")
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    per_step = {h: _device_ms_per_step(5, h) for h in (1, 2, 4, 8)}
    benchmark.extra_info.update({"ms_per_step_by_heads": per_step,
                                 "e4_projected_s": E4_STEPS * sum(per_step.values()) / 1e3,
                                 "device": torch.cuda.get_device_name(0)})
