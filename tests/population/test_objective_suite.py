"""Every objective passes the same checks: gradient against central differences, Hessian-vector
products against differences of the gradient and against the dense Hessian, a symmetric Hessian, the
working basis' round trip, and a short flow. Parametrised over every registered (task kind, model
kind) pair, each at a random state drawn from its cards (tests/population/states.py: a new
registration is checked by registering), and the test-only analytic objectives. These are checks of
consistency; the truth of every registered objective (a Monte Carlo of the task's sampled loss) is
tests/population/test_truth.py. The linear attention objectives of every family are also checked
against autograd of the torch reference (fastattn.population.reference)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from fastattn.models.linear_attention import SeparateConfig
from fastattn.population import (
    FlowOptions,
    LinearAttentionObjective,
    Moments,
    integrate,
    linear_dims,
    objective_for,
    reference,
    registered_objectives,
)

from .analytic import QuadraticWithHessian, StiffDiagonal
from .conftest import LINEAR_CONFIGS, random_moments, random_params
from .states import draw_states


@dataclass(frozen=True)
class StandInTask:
    kind: str
    moments_: Moments

    def moments(self) -> Moments:
        return self.moments_


@dataclass(frozen=True)
class StandInModel:
    kind: str
    dims: tuple[int, int, int]


# every registered pair, at a random state drawn from its cards (tests/population/states.py), and the
# test-only analytic objectives
CASES: list = [*registered_objectives(), "quadratic", "stiff_diagonal"]


def _id(case) -> str:
    return case if isinstance(case, str) else f"{case[0]}/{case[1]}"


def build(case, rng):
    """(objective, params [P]) for one case."""
    if case == "quadratic":
        rot, _ = np.linalg.qr(rng.standard_normal((7, 7)))
        return QuadraticWithHessian(rot @ np.diag(rng.uniform(0.1, 3.0, 7)) @ rot.T), rng.standard_normal(7)
    if case == "stiff_diagonal":
        return StiffDiagonal(np.geomspace(1.0, 1e3, 5)), rng.uniform(-1.0, 1.0, 5)
    (state,) = draw_states(case, rng, n_states=1)
    print(state)
    return state.objective, state.params


@pytest.fixture(params=CASES, ids=_id)
def case(request):
    return request.param


def _scale(x) -> float:
    return max(1.0, float(np.max(np.abs(x))))


def test_gradient_vs_central_differences(case, rng):
    obj, th = build(case, rng)
    L, g = obj.loss_grad(th)
    h = 1e-5
    fd = np.empty_like(th)
    for p in range(th.size):
        e = np.zeros_like(th)
        e[p] = h
        fd[p] = (obj.loss_grad(th + e)[0] - obj.loss_grad(th - e)[0]) / (2 * h)
    assert np.isfinite(L)
    assert np.max(np.abs(fd - g)) < 1e-6 * _scale(g)


def test_hessian_and_hvp_vs_gradient_differences(case, rng):
    obj, th = build(case, rng)
    if not (obj.has_hessian and obj.has_hessian_operator):
        # a gradient-only objective (the positional-encoding DIAG objective, written in Python):
        # the integrators use their Hessian-free methods on it
        pytest.skip(f"{type(obj).__name__} defines no Hessian")
    Hm = obj.hessian(th)
    np.testing.assert_allclose(Hm, Hm.T, rtol=0, atol=1e-12 * _scale(Hm))
    h = 1e-5
    fd = np.empty_like(Hm)
    for p in range(th.size):
        e = np.zeros_like(th)
        e[p] = h
        fd[:, p] = (obj.loss_grad(th + e)[1] - obj.loss_grad(th - e)[1]) / (2 * h)
    assert np.max(np.abs(fd - Hm)) < 1e-6 * _scale(Hm)
    project = getattr(obj, "project", lambda x: x)      # directions in the objective's domain
    for _ in range(3):
        u = project(rng.standard_normal(th.size))
        Hu = obj.hvp(th, u)
        np.testing.assert_allclose(Hu, Hm @ u, rtol=0, atol=1e-12 * _scale(Hm) * np.abs(u).sum())
        g_diff = (obj.loss_grad(th + h * u)[1] - obj.loss_grad(th - h * u)[1]) / (2 * h)
        assert np.max(np.abs(g_diff - Hu)) < 1e-6 * _scale(Hm) * np.abs(u).sum()


def test_working_basis_round_trip(case, rng):
    """to_working / from_working are inverse and orthogonal (norms kept), one model or K."""
    obj, th = build(case, rng)
    batch = np.stack([th, 2 * th, -th])
    w = obj.to_working(batch)
    np.testing.assert_allclose(obj.from_working(w), batch, rtol=0, atol=1e-13 * _scale(th))
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), np.linalg.norm(batch, axis=1), rtol=1e-13)
    np.testing.assert_allclose(obj.to_working(th), w[0], rtol=0, atol=1e-15 * _scale(th))


def test_a_short_flow_decreases_the_loss(case, rng):
    obj, th = build(case, rng)
    rec = np.linspace(0.0, 0.5, 6)
    r = integrate(obj, th, FlowOptions(t_end=0.5, record_times=rec, rtol=1e-8, atol=1e-12))
    assert r.status == "t_end" and r.times.size == 6
    assert np.all(np.diff(r.loss) <= 1e-12 * abs(r.loss[0]))
    assert r.loss[0] == pytest.approx(obj.loss_grad(th)[0], rel=1e-14)


# ---------------------------------------------------------------- the linear attention objectives
@pytest.mark.parametrize("config", LINEAR_CONFIGS,
                         ids=lambda c: c.kind + "-" + "x".join(map(str, linear_dims(c))))
@pytest.mark.parametrize("s_identity", [False, True])
def test_linear_attention_matches_torch_autograd(config, s_identity, rng):
    m, _, _ = random_moments(rng, config.dim, s_identity=s_identity)
    obj = LinearAttentionObjective(config, m)
    th = random_params(rng, config)
    L, g = obj.loss_grad(th)
    Lr, gr = reference.loss_and_grad(config, th, m)
    assert L == pytest.approx(Lr, rel=1e-10)
    np.testing.assert_allclose(g, gr, rtol=0, atol=1e-10 * _scale(gr))
    Hr = reference.hessian(config, th, m)
    np.testing.assert_allclose(obj.hessian(th), Hr, rtol=0, atol=1e-10 * _scale(Hr))
    # the same loss in Λ's eigenbasis, where the integrators work
    Le, ge = obj.loss_grad(obj.to_eigen(th), eigen=True)
    assert Le == pytest.approx(Lr, rel=1e-10)
    np.testing.assert_allclose(obj.from_eigen(ge), gr, rtol=0, atol=1e-10 * _scale(gr))
    assert obj.eig_diagonal == (s_identity or config.dim == 1)
    # a batch of K models is K single evaluations
    batch = np.stack([th, 0.5 * th])
    Lb, gb = obj.loss_grad(batch)
    np.testing.assert_array_equal(Lb, [L, obj.loss_grad(0.5 * th)[0]])
    np.testing.assert_array_equal(gb[0], g)


def test_registry_names_the_missing_pair():
    task = StandInTask("linear_regression", Moments(np.eye(2), np.eye(2), 0.0, 0.1))
    with pytest.raises(ValueError, match=r"task kind 'linear_regression' with model kind 'softmax'.*"
                                         r"registered pairs: .*\(linear_regression, cubic_mlp\)"):
        objective_for(task, StandInModel("softmax", (2, 1, 1)))
    with pytest.raises(ValueError, match=r"has no \.kind"):
        objective_for(object(), StandInModel("merged", (2, 1, 1)))


def test_generic_evaluations_in_the_callers_basis(rng):
    """The core's generic evaluations (any C++ objective: rotate in, evaluate in the working basis,
    rotate out) equal linear attention's own, which evaluate in the caller's basis directly."""
    from fastattn._core import Objective

    m, _, _ = random_moments(rng, 3)
    obj = LinearAttentionObjective(SeparateConfig(3, 2, rank=2), m)
    th = random_params(rng, obj.config)
    u = rng.standard_normal(th.size)
    batch = np.stack([th, -th])
    for got, want in ((Objective.loss_grad(obj, th), obj.loss_grad(th)),
                      (Objective.loss_grad(obj, batch), obj.loss_grad(batch))):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-12 * _scale(want[1]))
    Hm = obj.hessian(th)
    np.testing.assert_allclose(Objective.hessian(obj, th), Hm, rtol=0, atol=1e-12 * _scale(Hm))
    np.testing.assert_allclose(Objective.hvp(obj, th, u), Hm @ u, rtol=0, atol=1e-11 * _scale(Hm))
