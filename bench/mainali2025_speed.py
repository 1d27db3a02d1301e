"""Mainali & Teixeira 2025 speed: (1) the exact flow of C0 through all four stages against
task-centric SGD of the paper's protocol (C0: d=4, s=(2,1,.5,.25), N=32, P=64, η=0.01, batch 64,
250 epochs), same task set; (2) the exact population gradient of the general reduced model at
d = 256 (one integrator step of "euler", the working basis, no rotation) against the dense-product
floor: the four d×d products that the gradient's formula names (Q S Qᵀ, PᵀP, P(Ω∘K), E(G) Q S),
timed as numpy matmuls on one BLAS thread (loss_grad computes the two symmetric ones as rank-d
updates, half a GEMM each). Both in CPU time (time.process_time: a loaded machine's preemption
does not count); the pytest-benchmark form is bench/test_mainali2025_bench.py.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python bench/mainali2025_speed.py [--epochs 250] [--dim 256]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fastattn.models import LinearTransformer
from fastattn.population import FlowOptions, WishartReducedObjective, aligned_flow, integrate
from fastattn.tasks import WishartTasks
from fastattn.training import train


def c0(epochs: int) -> None:
    task = WishartTasks(4, spectrum="2,1,0.5,0.25", context=32, tasks=64, task_seed=0)
    eta_p = 0.64
    start = time.perf_counter()
    flow = train(LinearTransformer(4, init_scale=0.01, reduced=True), task, method="flow",
                 t_end=2 * eta_p * epochs, integrator="rk45", rtol=1e-10, atol=1e-14, n_records=50)
    t_flow = time.perf_counter() - start
    start = time.perf_counter()
    aligned = aligned_flow.exact_flow(task.s, 32, eta_p, np.full(4, 0.01), np.full(4, 0.01),
                            np.array([0.0, epochs]), omega=np.diag(task.omega()))
    t_aligned = time.perf_counter() - start
    start = time.perf_counter()
    sgd = train(LinearTransformer(4, init_scale=0.01, reduced=True), task, method="task_sgd",
                lr=0.01, steps=64 * epochs, batch_size=64, n_records=50)
    t_sgd = time.perf_counter() - start
    print(f"C0, {epochs} epochs")
    print(f"  exact flow, reduced (C++ WishartReduced, rk45 rtol 1e-10): {t_flow:.3f} s, "
          f"{flow.n_evals} gradient evaluations, final loss {flow.final_loss:.6f}")
    print(f"  exact flow, aligned (C++ WishartAligned, rk45 rtol 1e-10): {t_aligned:.3f} s, "
          f"{aligned.n_evals} evaluations, final loss {aligned.loss[-1]:.6f}")
    print(f"  task-centric SGD ({64 * epochs} updates, batch 64): {t_sgd:.2f} s, "
          f"{1e6 * t_sgd / (64 * epochs):.0f} µs/update, final population loss "
          f"{sgd.test_loss['population'][-1]:.6f}")
    print(f"  speed-up of the exact flow over SGD: {t_sgd / t_flow:.0f}x (reduced), "
          f"{t_sgd / t_aligned:.0f}x (aligned)")


def gradient(d: int, steps: int = 50, repeats: int = 5) -> None:
    rng = np.random.default_rng(0)
    s = np.sort(rng.uniform(0.1, 2.0, d))[::-1]
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    u = q * np.sign(np.diag(r))
    lam = rng.standard_normal((64, d))
    obj = WishartReducedObjective(s, 32, lam.T @ lam / 64, u)
    theta = rng.standard_normal(4 * d * d) / d
    best_step = np.inf
    for _ in range(repeats):
        start = time.process_time()
        res = integrate(obj, theta, FlowOptions(method="euler", lr=1e-6, t_end=2e-6 * steps,
                                                record_times=(0.0,)))
        best_step = min(best_step, (time.process_time() - start) / res.n_evals)
    a, b = rng.standard_normal((d, d)), rng.standard_normal((d, d))
    best_floor = np.inf
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(4 * steps):
            a @ b
        best_floor = min(best_floor, (time.process_time() - start) / steps)
    print(f"reduced-model population gradient at d = {d}: {1e3 * best_step:.3f} ms per evaluation "
          f"(euler step, working basis, CPU time); floor of 4 dense {d}x{d} products (numpy): "
          f"{1e3 * best_floor:.3f} ms; ratio {best_step / best_floor:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=250)
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    c0(args.epochs)
    gradient(args.dim)


if __name__ == "__main__":
    main()
