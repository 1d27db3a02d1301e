"""The order-4 stabilized explicit method: its shipped coefficient tables (order conditions, stability
interval, bounded stages and error estimate), each stage of the generator that made them
(tools/stabilized_tables.py, imported by path: it is not part of the package), and the C++ step
against the numpy reference step."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from fastattn.models.cubic_mlp import CubicMLPConfig
from fastattn.models.linear_attention import MergedConfig, SeparateConfig
from fastattn.population import LinearAttentionObjective, hessian, integrate, loss_and_grad, stabilized
from fastattn.population.stabilized import shipped

from .conftest import random_moments, random_params

STAGES = range(stabilized.S_MIN, stabilized.S_MAX + 1)


def _generator():
    path = Path(__file__).resolve().parents[2] / "tools" / "stabilized_tables.py"
    spec = importlib.util.spec_from_file_location("stabilized_tables", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generator = _generator()


def test_elementary_weights_detect_order():
    """The B-series check accepts classical RK4 (order 4) and rejects it with one weight moved."""
    A = np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]])
    b = np.array([1, 2, 2, 1]) / 6
    np.testing.assert_allclose(stabilized.elementary_weights(A, b), 1 / stabilized.GAMMA, atol=1e-15)
    A[3, 2], A[3, 0] = 0.9, 0.1  # same nodes c: only the trees that see A itself change
    wrong = np.abs(stabilized.elementary_weights(A, b) - 1 / stabilized.GAMMA) > 1e-3
    assert wrong[[3, 5, 6, 7]].all() and not wrong[[0, 1, 2, 4]].any()


@pytest.mark.parametrize("s", STAGES)
def test_shipped_table_has_order_4_and_an_order_3_estimate(s):
    t = shipped(s)
    assert t.mu.size == s - 4
    A, b = stabilized.tableau(t.mu, t.nu, t.kappa, t.a, t.b)
    np.testing.assert_allclose(stabilized.elementary_weights(A, b), 1 / stabilized.GAMMA, rtol=0, atol=1e-12)
    A5, bh = stabilized.tableau(t.mu, t.nu, t.kappa, t.a, t.b, t.a5, t.bh)
    phi = stabilized.elementary_weights(A5, bh)
    np.testing.assert_allclose(phi[:4], 1 / stabilized.GAMMA[:4], rtol=0, atol=1e-12)
    assert np.abs(phi[4:] - 1 / stabilized.GAMMA[4:]).max() > 1e-4  # a true order-3 estimate


@pytest.mark.parametrize("s", STAGES)
def test_shipped_table_is_stable_on_its_interval(s):
    """|R| ≤ 1 on [−ℓ_s, 0] and ≤ 0.95 (+ the LP grid's slack) away from 0; stages and the error
    estimate stay bounded on stiff components; ℓ_s grows like 0.35·s²."""
    t = shipped(s)
    z = -np.linspace(0.0, t.ell, 40 * s * s)
    R, E, stage_max = stabilized.stability_function(t, z)
    assert np.abs(R).max() <= 1 + 1e-9
    assert np.abs(R[z <= -1]).max() <= 0.96
    assert stage_max <= 2.5 and np.abs(E).max() <= 2.0
    R_out = stabilized.stability_function(t, np.array([-1.3 * t.ell]))[0]
    assert abs(R_out[0]) > 1  # the interval is the stable one, not an underestimate of it
    assert t.ell >= (0.23 if s < 10 else 0.30 if s < 20 else 0.34) * s * s
    if s > stabilized.S_MIN:
        assert t.ell > shipped(s - 1).ell


def test_recurrence_reproduces_the_node_polynomial(rng):
    nodes = -np.sort(rng.uniform(1.0, 50.0, 7))
    mu, nu, kappa = generator.recurrence(nodes, rng.uniform(0.5, 2.0, 7))
    z = np.linspace(-60.0, 0.0, 101)
    prev, cur = np.zeros_like(z), np.ones_like(z)
    for j in range(7):
        prev, cur = cur, (mu[j] * z + nu[j]) * cur + kappa[j] * prev
    np.testing.assert_allclose(cur, np.prod([1 - z / r for r in nodes], axis=0), rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_generator_stages_reproduce_a_shipped_table():
    """Each stage of the generator on the shipped table (cheap: one LP, not the bisection; eight
    starts of the finishing solve, not forty): ℓ_s is the longest feasible interval, the recurrence of
    its polynomial and the embedded weights of its finishing coefficients are the shipped ones, and
    the finishing solve finds coefficients of order 4. (Two starts sufficed on an AVX2 machine but
    not on an AVX-512 one: which start converges to 1e-13 depends on the BLAS's rounding.)"""
    s = 13
    ref = shipped(s)
    worst, c = generator.stability_polynomial(s, ref.ell)
    assert worst <= generator.DAMPING + 1e-9
    assert generator.stability_polynomial(s, 1.002 * ref.ell)[0] > generator.DAMPING
    mu, nu, kappa = generator.stage_recurrence(s, ref.ell, c)
    for name, got in (("mu", mu), ("nu", nu), ("kappa", kappa)):
        np.testing.assert_allclose(got, getattr(ref, name), rtol=1e-5, atol=1e-8, err_msg=name)
    a5, bh = generator.embedded(ref.mu, ref.nu, ref.kappa, ref.a, ref.b)
    np.testing.assert_allclose(a5, ref.a5, rtol=1e-10)
    np.testing.assert_allclose(bh, ref.bh, rtol=1e-8, atol=1e-12)
    a, b = generator.finishing(ref.mu, ref.nu, ref.kappa, starts=8)
    A, w = stabilized.tableau(ref.mu, ref.nu, ref.kappa, a, b)
    np.testing.assert_allclose(stabilized.elementary_weights(A, w), 1 / stabilized.GAMMA, rtol=0, atol=1e-12)


@pytest.mark.parametrize("config", [SeparateConfig(4, 5, rank=1), SeparateConfig(3, 2, rank=3),
                                              MergedConfig(3, 2), CubicMLPConfig(3, 2)])
@pytest.mark.parametrize("s", [5, 8, 13])
def test_cpp_step_equals_numpy_reference_step(rng, config, s):
    """One step of size h near a minimum (where long stabilized steps are taken): the C++ integrator
    equals the numpy reference step with the stage count its power iteration for ρ(J) picks. h puts
    1.2·h·ρ(J) at 0.99·ℓ_s (s = 5: 0.5·ℓ_5): an estimate a little below ρ picks s; one that
    stopped far below (clustered top eigenvalues) picks fewer stages (seen: s = 10 for 13, the step
    then unstable), so every stage count up to s is a candidate."""
    m, _, _ = random_moments(rng, config.dim)
    th = random_params(rng, config, scale=0.6)
    th = integrate(LinearAttentionObjective(config, m), th, method="stiff", t_end=1e4).final_params
    th = th + 1e-3 * rng.standard_normal(th.size)
    rho = 0.5 * np.abs(np.linalg.eigvalsh(hessian(config, th, m))).max()
    h = (0.5 if s == 5 else 0.99) * shipped(s).ell / (1.2 * rho)
    r = integrate(LinearAttentionObjective(config, m), th, method="stabilized", t_end=h, h0=h,
                  rtol=1e6, atol=1e6)
    assert r.status == "t_end" and r.n_steps == 1

    def f(p):
        return -0.5 * loss_and_grad(config, p, m)[1]

    # rounding (the C++ works in Λ's eigenbasis) is ≲ 1e-11; a different s differs by ≳ 1e-6
    diffs = {c: np.abs(r.final_params - stabilized.step(f, th, h, shipped(c))[0]).max()
             for c in range(s, stabilized.S_MIN - 1, -1)}
    assert min(diffs.values()) < 1e-10 * np.abs(r.final_params).max(), diffs
