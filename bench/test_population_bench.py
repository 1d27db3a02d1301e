"""Benchmarks of the C++ population core (pytest-benchmark; no timing asserts).

Run: python -m pytest bench/test_population_bench.py --benchmark-only -q
     (add --benchmark-columns=mean,median,min,rounds for a compact table)
and python bench/population_table.py for evaluations and wall time vs t per integrator.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from groups import label

from fastattn.experiments.zhang2025 import fig3_setting
from fastattn.models.linear_attention import SeparateConfig
from fastattn.population import (
    LinearAttentionObjective,
    Moments,
    integrate,
    make_evaluator,
    reference,
)
from fastattn.theory.zhang2025 import minimum_loss


def fig3(init: float, seed: int = 0):
    task, model = fig3_setting(init, seed)
    lstar = minimum_loss(task.eigvals, task.inv_context_mean())
    return model.config, task.moments(), model.to_flat(), lstar


def test_fig3_euler_1e4_steps(benchmark):
    config, m, th, _ = fig3(1e-2)
    lr = 0.02
    obj = LinearAttentionObjective(config, m)
    r = benchmark(lambda: integrate(obj, th, method="euler", t_end=2 * lr * 1e4, lr=lr,
                                    record_times=np.arange(0, 2 * lr * 1e4 + 1e-9, 2 * lr * 100)))
    assert r.n_steps == 10_000 and r.status == "t_end"
    benchmark.extra_info.update(n_steps=r.n_steps, final_loss=float(r.loss[-1]))


@pytest.mark.parametrize("method", ["stiff", "auto", "rk45"])
def test_fig3_flow_to_1e8(benchmark, method):
    config, m, th, lstar = fig3(1e-3)
    rec = np.geomspace(1, 1e8, 100)
    obj = LinearAttentionObjective(config, m)
    r = benchmark(lambda: integrate(obj, th, method=method, t_end=1e8, record_times=rec,
                                    max_evals=200_000))
    benchmark.extra_info.update(status=r.status, n_evals=r.n_evals, n_steps=r.n_steps,
                                n_jac=r.n_jac, t_final=r.t_final,
                                loss_gap=float(r.loss[-1] - lstar))
    print(f"\n{method}: status={r.status} evals={r.n_evals} steps={r.n_steps} jac={r.n_jac} "
          f"t_final={r.t_final:.3g} L-L*={r.loss[-1] - lstar:.2e} wall={r.wall_time:.4f}s")
    if method != "rk45":
        assert r.status == "t_end" and abs(r.loss[-1] - lstar) < 1e-8
    if method == "auto":
        assert r.n_evals <= 20_000


@pytest.mark.parametrize("method", ["rk45", "auto"])
def test_rank4_flow_to_target(benchmark, method):
    """Fig. 4 setting (separate D=8, H=9, R=4, λ∝1/d, init 1e-2) to within 1e-6 of L* (the
    experiments' stop): auto must not be slower than rk45 (it stays explicit on short runs)."""
    rng = np.random.default_rng(0)
    D, H, R = 8, 9, 4
    lam = 1 / np.arange(1, D + 1)
    lam /= lam.sum()
    m = Moments(cov=np.diag(lam), w_second=np.eye(D), noise=0.0, inv_n=1 / 31)
    th = np.concatenate([rng.normal(0, 1e-2 / np.sqrt(H), H),
                         rng.normal(0, 1e-2 / np.sqrt(H * R * D), 2 * H * R * D)])
    lstar = lam.sum() - np.sum(lam / (1 + (1 + lam.sum() / lam) / 31))
    rec = np.geomspace(1, 3e6, 800)
    obj = LinearAttentionObjective(SeparateConfig(D, H, rank=R), m)
    r = benchmark(lambda: integrate(obj, th, method=method, t_end=3e6,
                                    record_times=rec, target_loss=lstar * (1 + 1e-6)))
    benchmark.extra_info.update(status=r.status, n_evals=r.n_evals, n_jac=r.n_jac,
                                t_final=r.t_final)
    assert r.status == "target_loss"


@pytest.mark.parametrize("method", ["auto", "stabilized", "stiff_krylov"])
def test_large_flow_to_target(benchmark, method):
    """The sweeps' large model (separate rank 1, H = D = 64, P = 8256, linear spectrum, N = 512,
    init 1e-2·√D) to L ≤ 1.05·L*, rtol 1e-5: one round each (rk45 takes ≈ 50 s and 600k evaluations;
    python bench/population_table.py --setting large)."""
    import fastattn
    from fastattn.models import SeparateKQ
    from fastattn.tasks import LinearRegression

    D = 64
    task = LinearRegression(D, context=512, spectrum=tuple(fastattn.tasks.spectrum("linear", D)),
                            rotate=False)
    model = SeparateKQ(D, D, 1, init_scale=1e-2 * np.sqrt(D), init_seed=0)
    lstar = minimum_loss(task.eigvals, task.inv_context_mean())
    obj = LinearAttentionObjective(model.config, task.moments())
    r = benchmark.pedantic(lambda: integrate(obj, model.to_flat(), method=method, t_end=1e10,
                                             target_loss=1.05 * lstar, rtol=1e-5, atol=1e-9),
                           rounds=1, iterations=1)
    benchmark.extra_info.update(status=r.status, n_evals=r.n_evals, n_hvp=r.n_hvp, n_steps=r.n_steps)
    print(f"\n{method}: {r.status} evals={r.n_evals} hvp={r.n_hvp} steps={r.n_steps}")
    assert r.status == "target_loss"


def _big(D: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    rot, _ = np.linalg.qr(rng.standard_normal((D, D)))
    lam = np.linspace(1.0, 0.1, D)
    m = Moments(cov=rot @ np.diag(lam) @ rot.T, w_second=np.eye(D), noise=0.0, inv_n=1 / 31)
    th = 0.1 * rng.standard_normal(D * (1 + 2 * D))
    return SeparateConfig(D, D, rank=1), m, th


@pytest.mark.parametrize("D", [4, 256])
@pytest.mark.parametrize("impl", ["cpp_dense", "cpp_eigenbasis", "torch_reference", "numpy_floor"])
def test_per_step_evaluator(benchmark, D, impl):
    config, m, th = _big(D)
    label(benchmark, "separate_loss_grad", {"D": D, "H": D, "R": 1}, "loss+grad", impl)
    if impl == "torch_reference":
        benchmark(lambda: reference.loss_and_grad(config, th, m))
        return
    if impl == "numpy_floor":
        # the same dense products as the C++ dense path: Γ = Kᵀ diag(v) Q, W = BΓΛ, KM, QMᵀ
        H = D
        lam, S = m.cov, m.w_second
        A = lam @ S @ lam
        B = A + m.inv_n * (A + np.trace(S @ lam) * lam)
        v, K, Q = th[:H], th[H : H + H * D].reshape(H, D), th[H + H * D :].reshape(H, D)

        def step():
            G = K.T @ (v[:, None] * Q)
            W = B @ G @ lam
            M = 2 * (W - A)
            KM, QMt = K @ M, Q @ M.T
            return (G * W).sum(), (KM * Q).sum(1), v[:, None] * QMt, v[:, None] * KM

        benchmark(step)
        return
    ev = make_evaluator(config, m)
    if impl == "cpp_dense":
        benchmark(lambda: ev.loss_grad(th))
    else:
        te = ev.to_eigen(th)
        benchmark(lambda: ev.loss_grad(te, eigen=True))


@pytest.mark.parametrize("D", [4, 16, 64, 256, 1024])
def test_per_step_vs_D(benchmark, D):
    config, m, th = _big(D)
    ev = make_evaluator(config, m)
    te = ev.to_eigen(th)
    benchmark.group = "per-step vs D (separate, H=D, R=1, eigenbasis)"
    benchmark(lambda: ev.loss_grad(te, eigen=True))


@pytest.mark.parametrize("K", [1, 16, 128, 1024])
def test_per_step_vs_K(benchmark, K):
    config, m, th, _ = fig3(1e-2)
    rng = np.random.default_rng(1)
    thk = th + 1e-3 * rng.standard_normal((K, th.size))
    ev = make_evaluator(config, m)
    benchmark.group = "per-step vs K (Fig. 3 config, one call for K models)"
    benchmark(lambda: ev.loss_grad(thk))


def test_torch_threads_info():
    print(f"torch threads: {torch.get_num_threads()}")
