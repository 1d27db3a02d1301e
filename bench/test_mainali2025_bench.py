"""Mainali & Teixeira 2025: the exact population gradient of the general reduced model at d = 256
against the dense-product floor, in one session (pytest-benchmark; no timing asserts).

- `gradient`: one `euler` step of C++ `WishartReduced` (the working basis, no rotation): its
  loss_grad is two symmetric rank-d updates and two GEMMs (Eigen's own kernels, one thread: the
  core is built without OpenMP) plus three fused O(d²) passes, and the step's axpy.
- `floor`: the four d×d products that the gradient's formula names (Q S Qᵀ, PᵀP, P(Ω∘K), E(G) Q S),
  timed as numpy matmuls (numpy's BLAS: scipy-openblas here; `numpy.show_config()`), one thread.

Both are timed in CPU time (`time.process_time`), so that a loaded machine's preemption does not
count against the longer of the two; run with one BLAS thread (the floor skips otherwise):

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m pytest bench/test_mainali2025_bench.py \
        --benchmark-only --benchmark-columns=min,median,mean,rounds
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

D = 256
STEPS = 50  # per call: the basis rotations in and out (16 products) amortise to 0.3 product a step


def _options():
    from fastattn.population import FlowOptions

    return FlowOptions(method="euler", lr=1e-6, t_end=2e-6 * STEPS, record_times=(0.0,))


def problem(d: int):
    """The reduced objective at dimension d and a random point (the speed script's setting)."""
    from fastattn.population import WishartReducedObjective

    rng = np.random.default_rng(0)
    s = np.sort(rng.uniform(0.1, 2.0, d))[::-1]
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    lam = rng.standard_normal((64, d))
    obj = WishartReducedObjective(s, 32, lam.T @ lam / 64, q * np.sign(np.diag(r)))
    return obj, rng.standard_normal(4 * d * d) / d


@pytest.mark.benchmark(group=f"mainali2025-d{D}", timer=time.process_time)
def test_reduced_gradient(benchmark):
    from fastattn.population import integrate

    obj, theta = problem(D)
    res = benchmark.pedantic(lambda: integrate(obj, theta, _options()), rounds=5, warmup_rounds=1)
    assert res.n_evals >= STEPS
    benchmark.extra_info.update(evaluations_per_call=res.n_evals)


@pytest.mark.benchmark(group=f"mainali2025-d{D}", timer=time.process_time)
def test_dense_product_floor(benchmark):
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        pytest.skip("set OPENBLAS_NUM_THREADS=1 (the C++ core runs on one thread)")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((D, D)), rng.standard_normal((D, D))
    from fastattn.population import integrate

    # four products per gradient evaluation of test_reduced_gradient's call (its count of
    # evaluations does not depend on d)
    n_evals = integrate(*problem(4), _options()).n_evals

    def floor():
        for _ in range(4 * n_evals):
            a @ b

    benchmark.pedantic(floor, rounds=5, warmup_rounds=1)
    benchmark.extra_info.update(products_per_call=4 * n_evals, blas=_blas_name())


def _blas_name() -> str:
    try:
        return str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"])
    except (AttributeError, KeyError):
        return "unknown"
