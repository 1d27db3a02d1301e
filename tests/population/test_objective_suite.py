"""Every objective passes the same checks: gradient against central differences, Hessian-vector
products against differences of the gradient and against the dense Hessian, a symmetric Hessian, the
working basis' round trip, and a short flow. Parametrised over every registered (task kind, model
kind) pair — built from small stand-in tasks and models, so a new registration without a case here
fails — and the test-only analytic objectives. The linear attention objectives are also checked
against autograd of the torch reference (fastattn.population.reference); their Monte Carlo check is
tests/population/test_monte_carlo.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from fastattn.population import (
    FlowOptions,
    LinearAttentionObjective,
    Moments,
    integrate,
    objective_for,
    reference,
    registered_objectives,
)

from .analytic import QuadraticWithHessian, StiffDiagonal
from .conftest import random_moments, random_params


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


# model dims to test each registered pair at (D = 1 and single heads included)
REGISTERED_CASES = {
    ("linear_regression", "merged"): [(1, 2, 1), (3, 4, 1)],
    ("linear_regression", "cubic_mlp"): [(3, 2, 1)],
    ("linear_regression", "separate"): [(1, 3, 1), (3, 4, 2), (4, 2, 1)],
    # Musat et al. 2025 (orthonormal data): dims = (N, query uniform?, mask inclusive?)
    ("induction", "three_param"): [(5, 0, 0), (4, 1, 1)],
    ("induction", "gram19"): [(3, 0, 0), (3, 1, 1)],
    ("induction", "disentangled"): [(2, 0, 0), (2, 1, 1)],   # the full model at structured weights
    ("autoregressive", "aug"): [(1, 1, 4), (3, 1, 5)],       # AUG-1 on unitary contexts, (d, H, T_max)
    # (d, H, T_max): unitary at odd d, orthogonal at even d (pe_only: positional at d = 1)
    ("autoregressive", "diag"): [(3, 2, 3), (4, 3, 4)],
    ("autoregressive", "pe_only"): [(1, 1, 4), (2, 1, 3)],
    ("wishart_tasks", "linear_transformer"): [(1, 1, 1), (3, 1, 1)],
}
CASES = [(pair, dims) for pair, all_dims in REGISTERED_CASES.items() for dims in all_dims]
CASES += [("quadratic", None), ("stiff_diagonal", None)]


def _id(case) -> str:
    pair, dims = case
    return pair if isinstance(pair, str) else f"{pair[0]}/{pair[1]}-{'x'.join(map(str, dims))}"


def build(case, rng):
    """(objective, params [P]) for one case."""
    pair, dims = case
    if pair == "quadratic":
        rot, _ = np.linalg.qr(rng.standard_normal((7, 7)))
        return QuadraticWithHessian(rot @ np.diag(rng.uniform(0.1, 3.0, 7)) @ rot.T), rng.standard_normal(7)
    if pair == "stiff_diagonal":
        return StiffDiagonal(np.geomspace(1.0, 1e3, 5)), rng.uniform(-1.0, 1.0, 5)
    if pair[0] == "induction":
        from fastattn.models.disentangled import DisentangledTransformer
        from fastattn.tasks import InductionPairs

        N, uniform, inclusive = dims
        task = InductionPairs(2 * N, N, data="orthonormal", query="uniform" if uniform else "last")
        model = DisentangledTransformer(dim=2 * N, params="full" if pair[1] == "disentangled" else pair[1],
                                        mask="inclusive" if inclusive else "strict")
        theta = rng.normal(0.0, 1.0, 3 if pair[1] == "three_param" else 19)
        if pair[1] == "disentangled":       # a point of the 19-dim subspace, where it is exact
            from fastattn.analysis.pseudo_params import embed

            theta = np.concatenate([w.ravel() for w in embed(theta, 2 * N)])
        return objective_for(task, model), theta
    if pair[0] == "autoregressive":
        return _autoregressive_case(pair[1], dims, rng)
    if pair[0] == "wishart_tasks":        # the reduced model on a real task (C++ WishartReduced)
        from fastattn.models import LinearTransformer
        from fastattn.tasks import WishartTasks

        d = dims[0]
        task = WishartTasks(d, spectrum=",".join(map(str, rng.uniform(0.2, 2, d))), context=5,
                            tasks=4, task_seed=int(rng.integers(100)))
        model = LinearTransformer(d, reduced=True)
        return objective_for(task, model), rng.uniform(-1, 1, 4 * d * d)
    task = StandInTask(pair[0], random_moments(rng, dims[0])[0])
    model = StandInModel(pair[1], dims)
    return objective_for(task, model), random_params(rng, pair[1], dims)


def _autoregressive_case(kind, dims, rng):
    from fastattn.models import build_model, get_model
    from fastattn.tasks import AutoRegressive

    d, H, tmax = dims
    if kind == "aug":
        task = AutoRegressive(dim=d, context=tmax, context_dist="unitary", encoding="augmented")
        model = build_model(get_model(kind).config(d, H, init_scale=0.5))
        return objective_for(task, model), rng.standard_normal(model.flat_size())
    dist = "positional" if d == 1 else ("orthogonal" if d % 2 == 0 else "unitary")
    task = AutoRegressive(dim=d, context=tmax, context_dist=dist, mu=3.0)
    model = build_model(get_model(kind).config(d, H, tmax, init_scale=0.5))
    return objective_for(task, model), rng.standard_normal(model.flat_size())


@pytest.fixture(params=CASES, ids=_id)
def case(request):
    return request.param


def test_every_registered_objective_has_cases():
    assert set(registered_objectives()) == set(REGISTERED_CASES)


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
    assert obj.has_hessian and obj.has_hessian_operator
    Hm = obj.hessian(th)
    np.testing.assert_allclose(Hm, Hm.T, rtol=0, atol=1e-12 * _scale(Hm))
    h = 1e-5
    fd = np.empty_like(Hm)
    for p in range(th.size):
        e = np.zeros_like(th)
        e[p] = h
        fd[:, p] = (obj.loss_grad(th + e)[1] - obj.loss_grad(th - e)[1]) / (2 * h)
    assert np.max(np.abs(fd - Hm)) < 1e-6 * _scale(Hm)
    for _ in range(3):
        u = rng.standard_normal(th.size)
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
@pytest.mark.parametrize("case", [c for c in CASES if not isinstance(c[0], str)
                                  and c[0][0] == "linear_regression"], ids=_id)
@pytest.mark.parametrize("s_identity", [False, True])
def test_linear_attention_matches_torch_autograd(case, s_identity, rng):
    (_, family), dims = case
    m, _, _ = random_moments(rng, dims[0], s_identity=s_identity)
    obj = LinearAttentionObjective(family, dims, m)
    th = random_params(rng, family, dims)
    L, g = obj.loss_grad(th)
    Lr, gr = reference.loss_and_grad(family, th, dims, m)
    assert L == pytest.approx(Lr, rel=1e-10)
    np.testing.assert_allclose(g, gr, rtol=0, atol=1e-10 * _scale(gr))
    Hr = reference.hessian(family, th, dims, m)
    np.testing.assert_allclose(obj.hessian(th), Hr, rtol=0, atol=1e-10 * _scale(Hr))
    # the same loss in Λ's eigenbasis, where the integrators work
    Le, ge = obj.loss_grad(obj.to_eigen(th), eigen=True)
    assert Le == pytest.approx(Lr, rel=1e-10)
    np.testing.assert_allclose(obj.from_eigen(ge), gr, rtol=0, atol=1e-10 * _scale(gr))
    assert obj.eig_diagonal == (s_identity or dims[0] == 1)
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
    obj = LinearAttentionObjective("separate", (3, 2, 2), m)
    th = random_params(rng, "separate", (3, 2, 2))
    u = rng.standard_normal(th.size)
    batch = np.stack([th, -th])
    for got, want in ((Objective.loss_grad(obj, th), obj.loss_grad(th)),
                      (Objective.loss_grad(obj, batch), obj.loss_grad(batch))):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-12 * _scale(want[1]))
    Hm = obj.hessian(th)
    np.testing.assert_allclose(Objective.hessian(obj, th), Hm, rtol=0, atol=1e-12 * _scale(Hm))
    np.testing.assert_allclose(Objective.hvp(obj, th, u), Hm @ u, rtol=0, atol=1e-11 * _scale(Hm))
