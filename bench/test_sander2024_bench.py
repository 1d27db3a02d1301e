"""Sander et al. 2024, Fig. 3 (orthogonal, H = 8, d = 10, T_max = 20): the authors' route is 10⁵
iterations of jax-jitted GD on their closed-form loss l_O (orthogonal.py); here the same 10⁵
iterations of exact GD through the C++ core, against the same closed form written in torch, its
gradient by autograd, the whole step compiled with torch.compile (compile time excluded), and the
exact gradient flow (adaptive steps) to the loss GD reaches. pytest-benchmark, no timing asserts.

Run: python -m pytest bench/test_sander2024_bench.py --benchmark-only -q -s
     (--benchmark-columns=mean,min,rounds for a compact table)
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from fastattn._core_loader import has_cpp
from fastattn.models import ARDiag
from fastattn.population import AutoRegressiveObjective, FlowOptions, integrate

pytestmark = pytest.mark.skipif(not has_cpp(), reason="needs the compiled core")

D, H, TMAX, LR, STEPS = 10, 8, 20, 1e-3, 100_000
TORCH_STEPS = int(os.environ.get("FASTATTN_BENCH_TORCH_STEPS", STEPS))


def _theta0() -> np.ndarray:
    return ARDiag(D, H, TMAX, init_scale=0.1, init_seed=0).to_flat()


def torch_loss(theta: torch.Tensor) -> torch.Tensor:
    """l_O summed over T = 2..T_max (spec §5.7), vectorised over T like the authors' orthogonal.py."""
    A = theta[:H * D].reshape(H, D)
    B = theta[H * D:2 * H * D].reshape(H, D)
    P = theta[2 * H * D:].reshape(TMAX, TMAX)
    C = B.T @ A
    T = torch.arange(2, TMAX + 1)
    rows = P[T - 2]                                                         # [T_max−1, T_max]
    cols = torch.arange(TMAX)
    used = cols[None, :] < T[:, None]
    before = cols[None, :] == (T - 2)[:, None]
    rest = rows * (used & ~before)
    pm, pT = rows[torch.arange(TMAX - 1), T - 2], rows[torch.arange(TMAX - 1), T - 1]
    Q, Q2 = rest.sum(1), (rest * rest).sum(1)
    R = C.sum(1)
    c = C[torch.arange(D), torch.arange(D) ^ 1]
    S, F, tr, X, Y = R @ R, (C * C).sum(), torch.trace(C), R @ c, c @ c
    per_T = pm ** 2 * S + Q2 * F + 2 * pm * Q * X + (Q * Q - Q2) * Y - 2 * pT * tr + D
    return per_T.sum()


def test_torch_closed_form_equals_the_core():
    th = _theta0()
    core = AutoRegressiveObjective("orthogonal", (D, H, TMAX))
    t = torch.tensor(th, requires_grad=True)
    loss = torch_loss(t)
    loss.backward()
    L, g = core.loss_grad(th)
    assert float(loss) == pytest.approx(L, rel=1e-12)
    np.testing.assert_allclose(t.grad.numpy(), g, atol=1e-10)


def test_fig3_orthogonal_gd_core(benchmark):
    obj = AutoRegressiveObjective("orthogonal", (D, H, TMAX))
    opts = FlowOptions(method="euler", lr=LR, t_end=2 * LR * STEPS, record_times=(0.0, 2 * LR * STEPS))
    r = benchmark.pedantic(lambda: integrate(obj, _theta0(), opts), rounds=3, iterations=1)
    assert r.n_steps == STEPS
    benchmark.extra_info.update(final_loss=float(r.loss[-1]), n_steps=r.n_steps)
    print(f"\ncore GD: {STEPS} steps, final loss {r.loss[-1]:.3e}")


def test_fig3_orthogonal_gd_torch_compile(benchmark):
    """The same GD, step = θ − lr·∇l_O(θ) with torch.func.grad, compiled whole (fullgraph) with
    torch.compile, one thread. TORCH_STEPS (env FASTATTN_BENCH_TORCH_STEPS, default 10⁵) steps."""
    torch.set_num_threads(1)
    step = torch.compile(lambda th: th - LR * torch.func.grad(torch_loss)(th), fullgraph=True)
    th0 = torch.tensor(_theta0())
    step(th0)                                                               # compile outside timing

    def run() -> torch.Tensor:
        th = th0
        for _ in range(TORCH_STEPS):
            th = step(th)
        return th

    th = benchmark.pedantic(run, rounds=1, iterations=1)
    final = float(torch_loss(th))
    benchmark.extra_info.update(final_loss=final, steps=TORCH_STEPS)
    print(f"\ntorch.compile GD: {TORCH_STEPS} steps, final loss {final:.3e}")


@pytest.mark.parametrize("method", ["rk45", "auto"])
def test_fig3_orthogonal_flow_to_the_gd_loss(benchmark, method):
    """Exact flow, t_end = 2·lr·10⁵ (the GD run's time), stopped at the loss GD reaches."""
    obj = AutoRegressiveObjective("orthogonal", (D, H, TMAX))
    gd = integrate(obj, _theta0(), FlowOptions(method="euler", lr=LR, t_end=2 * LR * STEPS,
                                               record_times=(0.0, 2 * LR * STEPS)))
    opts = FlowOptions(method=method, t_end=2 * LR * STEPS * 10, target_loss=float(gd.loss[-1]),
                       rtol=1e-8, atol=1e-12, record_times=(0.0,))
    r = benchmark.pedantic(lambda: integrate(obj, _theta0(), opts), rounds=3, iterations=1)
    benchmark.extra_info.update(status=r.status, n_evals=r.n_evals, t_final=r.t_final)
    print(f"\nflow {method}: status {r.status}, {r.n_evals} evaluations, t {r.t_final:.4g} "
          f"(GD's t {2 * LR * STEPS:g}), loss {obj.loss_grad(r.final_params)[0]:.3e}")
