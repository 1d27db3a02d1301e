"""The integrators against closed-form flows of small Python objectives (tests/population/analytic.py,
driven through the core's Objective trampoline): exact discrete maps of euler and rk4, the quadratic
flow expm(−Ht/2)θ₀ for every adaptive method, orders of convergence and Rodas4 across a stiff
nonlinear diagonal problem, capabilities, batches, errors and interrupts from Python."""

from __future__ import annotations

import numpy as np
import pytest

from fastattn._core_loader import core

from .analytic import Quadratic, QuadraticWithHessian, StiffDiagonal

ADAPTIVE = ("rk45", "stiff", "stiff_krylov", "stabilized", "auto")


def run(objective, params0, **options):
    method = options.pop("method")
    return core.integrate(objective, np.asarray(params0, dtype=np.float64),
                          core.Options(method=core.Method.__members__[method], **options))


def spd(rng, P: int, lo: float, hi: float) -> np.ndarray:
    """A random symmetric matrix with eigenvalues spread log-uniformly over [lo, hi]."""
    rot, _ = np.linalg.qr(rng.standard_normal((P, P)))
    return rot @ np.diag(np.geomspace(lo, hi, P)) @ rot.T


def test_euler_and_rk4_are_their_exact_maps(rng):
    """On L = ½θᵀHθ, GD is θ ← (I − lr·H)θ and one RK4 step of the flow θ̇ = −½Hθ is the degree-4
    Taylor polynomial of expm(−hH/2)."""
    H = spd(rng, 6, 0.1, 3.0)
    th = rng.standard_normal(6)
    obj = Quadratic(H)
    lr, n = 0.05, 40
    r = run(obj, th, method="euler", t_end=2 * lr * n, lr=lr)
    exact = np.linalg.matrix_power(np.eye(6) - lr * H, n) @ th
    np.testing.assert_allclose(r["final_params"][0], exact, rtol=1e-12, atol=1e-14)
    h = 0.3
    Z = -0.5 * h * H
    step = np.eye(6) + Z + Z @ Z / 2 + Z @ Z @ Z / 6 + Z @ Z @ Z @ Z / 24
    r = run(obj, th, method="rk4", t_end=h * 20, dt=h)
    assert r["n_steps"][0] == 20
    np.testing.assert_allclose(r["final_params"][0], np.linalg.matrix_power(step, 20) @ th,
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("method", ADAPTIVE)
def test_adaptive_methods_follow_the_quadratic_flow(rng, method):
    H = spd(rng, 8, 0.05, 5.0)
    th = rng.standard_normal(8)
    obj = QuadraticWithHessian(H)
    rec = np.linspace(0.0, 10.0, 11)
    r = run(obj, th, method=method, t_end=10.0, rtol=1e-9, atol=1e-12, record_times=rec,
            record_params=True)
    assert r["status"] == ["t_end"]
    exact = np.stack([obj.flow(th, t) for t in rec])
    np.testing.assert_allclose(r["params"][0], exact, rtol=0, atol=2e-7)
    np.testing.assert_allclose(r["loss"][0], [obj.loss_grad(p)[0] for p in exact], rtol=1e-6, atol=1e-14)


@pytest.mark.parametrize(("method", "order"), [("stiff", 4), ("stabilized", 4), ("rk45", 5)])
def test_order_of_convergence_on_the_nonlinear_diagonal_flow(method, order):
    """Global error against the closed form falls like n_steps^−p as the tolerance is tightened."""
    obj = StiffDiagonal(np.geomspace(0.5, 20.0, 6))
    th = np.linspace(0.4, 1.2, 6)
    exact = obj.flow(th, 3.0)
    ns, es = [], []
    for rt in np.geomspace(1e-4, 1e-9, 6):
        r = run(obj, th, method=method, t_end=3.0, rtol=rt, atol=rt * 1e-2)
        assert r["status"] == ["t_end"]
        ns.append(r["n_steps"][0])
        es.append(np.abs(r["final_params"][0] - exact).max())
    slope = np.polyfit(np.log(ns), np.log(es), 1)[0]
    assert -order - 1.0 < slope < -order + 0.6, (slope, ns, es)


def test_rodas4_steps_across_a_stiff_flow():
    """λ from 1 to λ_max: Rodas4 (L-stable) steps as the slow components allow, so its step count
    hardly grows with λ_max, where an explicit method needs h < 6.6/λ_max; auto's Hessian-free Rodas4
    episodes take over from its stabilized method."""
    th = np.linspace(0.5, 1.0, 7)
    rec = np.array([0.0, 1e-6, 1e-3, 0.5, 2.0, 10.0])
    steps = {}
    for lam_max in (1e2, 1e6):
        obj = StiffDiagonal(np.geomspace(1.0, lam_max, 7))
        exact = np.array([obj.loss_at(th, t) for t in rec])
        for method in ("stiff", "stiff_krylov", "auto"):
            r = run(obj, th, method=method, t_end=10.0, rtol=1e-7, atol=1e-11, record_times=rec)
            assert r["status"] == ["t_end"]
            np.testing.assert_allclose(r["loss"][0], exact, rtol=1e-5, atol=1e-12)
            np.testing.assert_allclose(r["final_params"][0], obj.flow(th, 10.0), rtol=0, atol=1e-7)
            steps[method, lam_max] = r["n_steps"][0], r["n_evals"][0]
    assert r["n_hvp"][0] > 0 and r["n_jac"][0] == 0  # at λ_max = 1e6: Rodas4 episodes, no dense Hessian
    assert steps["stiff", 1e6][0] < 2 * steps["stiff", 1e2][0], steps
    assert steps["auto", 1e6][1] < 3 * steps["stiff", 1e6][1], steps
    r = run(obj, th, method="rk45", t_end=10.0, rtol=1e-7, atol=1e-11,
            max_evals=int(10 * steps["stiff", 1e6][1]))
    assert r["status"] == ["max_evals"] and r["t_final"][0] < 0.1


def test_capabilities_are_checked_at_start(rng):
    """A first-order objective runs the explicit methods and auto (Dormand-Prince and the stabilized
    method); the Rosenbrock methods name what it lacks."""
    H = spd(rng, 5, 0.1, 2.0)
    th = rng.standard_normal(5)
    obj = Quadratic(H)
    assert not obj.has_hessian and not obj.has_hessian_operator
    assert QuadraticWithHessian(H).has_hessian and QuadraticWithHessian(H).has_hessian_operator
    for method in ("rk45", "stabilized", "auto"):
        r = run(obj, th, method=method, t_end=5.0, rtol=1e-9, atol=1e-12)
        assert r["status"] == ["t_end"] and r["n_jac"][0] == 0 and r["n_hvp"][0] == 0
        np.testing.assert_allclose(r["final_params"][0], obj.flow(th, 5.0), atol=1e-7)
    with pytest.raises(ValueError, match="stiff needs a dense Hessian: objective Quadratic has none"):
        run(obj, th, method="stiff", t_end=1.0)
    with pytest.raises(ValueError, match="needs a Hessian operator: objective Quadratic has none"):
        run(obj, th, method="stiff_krylov", t_end=1.0)


def test_batch_of_python_objectives_equals_single_runs(rng):
    objs = [QuadraticWithHessian(spd(rng, 4, 0.1, 20.0)) for _ in range(3)]
    th = rng.standard_normal((3, 4))
    rec = np.linspace(0, 4, 5)
    for method in ("rk45", "stiff", "auto"):
        b = run(objs, th, method=method, t_end=4.0, record_times=rec)
        for k in range(3):
            s = run(objs[k], th[k], method=method, t_end=4.0, record_times=rec)
            np.testing.assert_array_equal(b["loss"][k], s["loss"][0])
            np.testing.assert_array_equal(b["final_params"][k], s["final_params"][0])
    with pytest.raises(ValueError, match="one per model"):
        run(objs[:2], th, method="rk45", t_end=1.0)


class _Failing(Quadratic):
    """Raises `error` from its n-th evaluation on."""

    def __init__(self, H, error, n):
        super().__init__(H)
        self.error, self.n, self.calls = error, n, 0

    def loss_grad(self, params):
        self.calls += 1
        if self.calls >= self.n:
            raise self.error
        return super().loss_grad(params)


def test_python_errors_propagate_and_interrupts_stop_the_run(rng):
    H = spd(rng, 3, 0.1, 2.0)
    th = rng.standard_normal(3)
    with pytest.raises(RuntimeError, match="model broke"):
        run(_Failing(H, RuntimeError("model broke"), 5), th, method="rk45", t_end=10.0)
    obj = _Failing(H, KeyboardInterrupt(), 40)
    r = run([obj, Quadratic(H)], np.stack([th, th]), method="rk45", t_end=10.0)
    assert r["status"] == ["interrupted", "interrupted"]     # the rest of the batch is skipped
    assert 0 < r["n_steps"][0] and r["t_final"][0] < 10.0
    np.testing.assert_allclose(r["final_params"][0], obj.flow(th, r["t_final"][0]), atol=1e-6)
    np.testing.assert_array_equal(r["final_params"][1], th)

    class WrongShape(Quadratic):
        def loss_grad(self, params):
            return 0.0, np.zeros(2)

    with pytest.raises(ValueError, match="grad must be a float array of 3 numbers"):
        run(WrongShape(H), th, method="rk45", t_end=1.0)
