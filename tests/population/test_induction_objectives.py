"""The induction objectives (Musat et al. 2025) against the full disentangled transformer in torch:
the Gram-space loss and gradient per sequence (exact), the orthonormal population (exact), the
Gaussian population (Monte Carlo within 4 standard errors), the 3-parameter closed form as the
restricted 19-parameter model, dead directions, full-matrix GD restricted to the subspace, and the
complex-step Hessians against torch's double backward through the full model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastattn.analysis.pseudo_params import DEAD, DEAD_ORTHONORMAL_STRICT, embed, project, subspace_report
from fastattn.models.disentangled import (
    NAMES,
    THREE_PARAM_INDEX,
    DisentangledTransformer,
    disentangled_forward,
    pseudo_weights,
)
from fastattn.population import emergence, objective_for
from fastattn.population.induction import (
    InductionGram19Objective,
    InductionThreeParamObjective,
    embed_three_param,
    orthonormal_grams,
)
from fastattn.tasks import InductionPairs
from fastattn.tasks.induction import batch_grams
from helpers import assert_mc_agrees

MASKS = ("strict", "inclusive")


def _full_losses(batch, theta, D, mask):
    """Per-sequence ‖y − ỹ‖² `[B]` of the full model at W = Σ θ_k B_k, and its θ-gradient `[B, 19]`."""
    t = torch.tensor(theta, requires_grad=True)
    losses, grads = [], []
    for i in range(batch.X.shape[0]):
        model = DisentangledTransformer(dim=D, params="gram19", mask=mask)
        with torch.no_grad():
            model.theta.copy_(t)
        loss = ((model(batch.X[i:i + 1]) - batch.y[i:i + 1]) ** 2).sum()
        loss.backward()
        losses.append(loss.item())
        grads.append(model.theta.grad.numpy().copy())
    return np.array(losses), np.array(grads)


def _random_theta(rng, scale=1.0):
    return rng.normal(0.0, scale, 19)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("data", ["gaussian", "orthonormal"])
def test_gram_space_equals_full_model_per_sequence(mask, data, rng):
    D, N = 6, 3
    batch = InductionPairs(D, N, data=data).sample(4, step=int(rng.integers(1 << 30)))
    theta = _random_theta(rng, 0.3 if data == "gaussian" else 1.0)  # Gaussian scores scale with D
    losses, grads = _full_losses(batch, theta, D, mask)
    G1, G2, GM, target = batch_grams(batch)
    for i in range(4):
        one = slice(i, i + 1)
        obj = InductionGram19Objective.from_grams(G1[one], G2[one], GM[one], target[one], mask)
        L, g = obj.loss_grad(theta)
        assert L == pytest.approx(losses[i], rel=1e-10, abs=1e-12)
        np.testing.assert_allclose(g, grads[i], rtol=0, atol=1e-10 * max(1.0, np.abs(grads[i]).max()))


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("query", ["last", "uniform"])
def test_orthonormal_population_is_exact(mask, query, rng):
    """Every orthonormal sequence with the same q has the same loss: the population loss is the
    mean over q of the fixed Gram matrices' loss (to 1e-10 against the full model)."""
    D, N = 6, 3
    task = InductionPairs(D, N, data="orthonormal", query=query)
    batch = task.sample(48, step=int(rng.integers(1 << 30)))
    theta = _random_theta(rng)
    losses, _ = _full_losses(batch, theta, D, mask)
    q = batch.q.numpy()
    assert set(q) == ({N} if query == "last" else set(range(1, N + 1)))
    per_q = [losses[q == k] for k in sorted(set(q))]
    for group in per_q:
        np.testing.assert_allclose(group, group[0], rtol=1e-10)
    L = InductionGram19Objective.orthonormal(N, query, mask).loss_grad(theta)[0]
    assert L == pytest.approx(np.mean([g[0] for g in per_q]), rel=1e-10)
    G1, G2, GM, target = orthonormal_grams(N, query)
    bG1, bG2, bGM, btarget = batch_grams(batch)
    first = [int(np.argmax(q == k)) for k in sorted(set(q))]
    np.testing.assert_allclose(bG1[first], G1, atol=1e-13)
    np.testing.assert_allclose(bG2[first], G2, atol=1e-13)
    np.testing.assert_allclose(bGM[first], GM, atol=1e-13)
    np.testing.assert_array_equal(btarget[first], target)


@pytest.mark.parametrize("mask", MASKS)
def test_gram19_hessian_equals_autograd_of_the_full_model(mask, rng):
    """The complex-step Hessian (and an HVP) of one Gaussian sequence's Gram-space loss equals
    torch's double backward of ‖y − ỹ‖² through the full model at W = Σ θ_k B_k."""
    D, N = 6, 3
    batch = InductionPairs(D, N, data="gaussian").sample(1, step=int(rng.integers(1 << 30)))
    theta = _random_theta(rng, 0.3)

    def loss(t):
        return ((disentangled_forward(batch.X, *pseudo_weights(t, D, NAMES), mask) - batch.y) ** 2).sum()

    H_ref = torch.autograd.functional.hessian(loss, torch.tensor(theta)).numpy()
    obj = InductionGram19Objective.from_grams(*batch_grams(batch), mask)
    scale = max(1.0, np.abs(H_ref).max())
    np.testing.assert_allclose(obj.hessian(theta), H_ref, rtol=0, atol=1e-9 * scale)
    u = rng.standard_normal(19)
    np.testing.assert_allclose(obj.hvp(theta, u), H_ref @ u, rtol=0, atol=1e-9 * scale * np.abs(u).sum())


def test_gaussian_population_matches_monte_carlo(rng):
    """The Gram objective on one sample set vs the full model on an independent one: within 4
    standard errors of the difference."""
    D, N, B = 4, 3, 3000
    task = InductionPairs(D, N, data="gaussian", data_seed=int(rng.integers(1 << 30)))
    theta = _random_theta(rng, 0.2)
    a, b = task.sample(B, step=0), task.sample(B, step=1)
    G1, G2, GM, target = batch_grams(a)
    per = [InductionGram19Objective.from_grams(G1[i:i + 1], G2[i:i + 1], GM[i:i + 1], target[i:i + 1])
           .loss_grad(theta)[0] for i in range(B)]
    gram_mean = InductionGram19Objective.from_grams(G1, G2, GM, target).loss_grad(theta)[0]
    assert gram_mean == pytest.approx(np.mean(per), rel=1e-12)
    with torch.no_grad():
        full = ((disentangled_forward(b.X, *(torch.tensor(w) for w in embed(theta, D))) - b.y) ** 2).sum(-1)
    se = np.sqrt(np.var(per) / B + full.var().item() / B)
    assert_mc_agrees(full.mean().item(), se, gram_mean)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("query", ["last", "uniform"])
def test_three_param_is_the_restricted_gram19(mask, query, rng):
    N = 5
    three = InductionThreeParamObjective(N, query, mask)
    gram = InductionGram19Objective.orthonormal(N, query, mask)
    for _ in range(3):
        theta3 = rng.normal(0.0, 1.5, 3)
        L3, g3 = three.loss_grad(theta3)
        L19, g19 = gram.loss_grad(embed_three_param(theta3))
        assert L3 == pytest.approx(L19, rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(g3, g19[list(THREE_PARAM_INDEX)], rtol=1e-10, atol=1e-13)


def test_dead_directions_have_zero_gradient(rng):
    batch = InductionPairs(4, 3, data="gaussian").sample(8, step=int(rng.integers(1 << 30)))
    dead = [NAMES.index(n) for n in DEAD]
    for mask in MASKS:
        obj = InductionGram19Objective.from_grams(*batch_grams(batch), mask)
        g = obj.loss_grad(_random_theta(rng, 0.3))[1]
        np.testing.assert_array_equal(g[dead], 0.0)
    g = InductionGram19Objective.orthonormal(4, "uniform").loss_grad(_random_theta(rng))[1]
    np.testing.assert_array_equal(g[[NAMES.index(n) for n in DEAD_ORTHONORMAL_STRICT]], 0.0)


def test_full_matrix_gd_in_the_subspace_follows_the_pseudo_parameter_gd(rng):
    """Full-matrix GD (lr λ) of the disentangled model on orthonormal data (q = N), its gradient
    projected onto the 19-dim subspace (the population gradient at structured weights, Theorem 1) or
    onto the 3 directions, follows GD of the Gram19 / 3-parameter objectives with lr λ/D."""
    D, N, lam, steps = 8, 3, 4.0, 40
    task = InductionPairs(D, N, data="orthonormal", query="last", data_seed=int(rng.integers(1 << 30)))
    X = task.sample(1, step=0)
    cases = ((False, InductionGram19Objective.orthonormal(N)), (True, InductionThreeParamObjective(N)))
    for restricted, obj in cases:
        model = DisentangledTransformer(dim=D)
        theta = np.zeros(3 if restricted else 19)
        for _ in range(steps):
            model.zero_grad()
            task.loss(model, X).backward()
            g = project(model.W1.grad, model.W2.grad, model.W3.grad)  # = ∇θ L / D
            if restricted:
                g = np.where(np.isin(np.arange(19), THREE_PARAM_INDEX), g, 0.0)
            with torch.no_grad():
                for w, step in zip((model.W1, model.W2, model.W3), embed(g, D), strict=True):
                    w -= lam * torch.from_numpy(step)
            theta = theta - lam / D * obj.loss_grad(theta)[1]
        got = project(model.W1, model.W2, model.W3)
        want = embed_three_param(theta) if restricted else theta
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1.0, np.abs(want).max()))
        assert np.abs(want).max() > 0.1


def test_registry_builds_exact_objectives_and_refuses_gaussian_data():
    model = DisentangledTransformer(dim=8, params="three_param")
    obj = objective_for(InductionPairs(8, 4, data="orthonormal", query="last"), model)
    assert obj.loss_grad(np.zeros(3))[1][2] == pytest.approx(-0.25)
    with pytest.raises(ValueError, match="orthonormal"):
        objective_for(InductionPairs(8, 4, data="gaussian"), model)


def _orbit(batch, D: int):
    """The images of one orthonormal sequence under a finite set of the data symmetries of Theorem 1
    (spec §5.2): content vectors ↦ x·diag(s)·P (s a character of Z₂^k with 2^k ≥ D, P a cyclic shift)
    and positions ↦ ±p·F, F = diag(E, E) or M·diag(E, E) with E of the same kind on D/2. Averaging a
    gradient over the orbit averages each D×D block over these maps, which leaves only c·I (content),
    c₁I + c₂M (positions) and 0 (mixed): the projection onto the 19-dim subspace, so the orbit-mean
    gradient at structured weights is the exact population gradient without calling `project`."""
    def signed_shifts(n):
        k = max(1, int(np.ceil(np.log2(n))))
        bits = np.array([[bin(i & g).count("1") % 2 for i in range(n)] for g in range(2**k)])
        eye = np.eye(n)
        return [np.diag(1.0 - 2 * s) @ np.roll(eye, c, axis=1) for s in bits for c in range(n)]

    h = D // 2
    M = np.block([[np.zeros((h, h)), np.eye(h)], [np.eye(h), np.zeros((h, h))]])
    content = signed_shifts(D)
    positions = [sign * swap @ np.kron(np.eye(2), E) for E in signed_shifts(h)
                 for swap in (np.eye(D), M) for sign in (1.0, -1.0)]
    X, y = batch.X[0].numpy(), batch.y[0].numpy()
    Xs = [np.hstack([X[:, :D] @ g, X[:, D:] @ f]) for g in content for f in positions]
    ys = [y @ g for g in content for _ in positions]
    return type(batch)(torch.tensor(np.array(Xs)), torch.tensor(np.array(ys)), batch.q.repeat(len(Xs)))


@pytest.mark.slow
def test_full_model_gd_stays_in_the_subspace_and_follows_the_exact_flows(rng):
    """Acceptance (issue 18, spec §11.3): plain GD of all 28D² weights of the full model on the exact
    population gradient (the orbit mean, no projection anywhere) stays in the 19-dim subspace to
    rounding, its 19 coordinates equal GD of the Gram19 objective (lr λ/D) step by step, and its
    emergence times follow the exact 19-parameter flow; the same model with the step restricted to
    α₃, β₂, γ₃ follows the 3-parameter flow. A single sequence's gradient leaves the subspace."""
    D, N = 6, 3
    task = InductionPairs(D, N, data="orthonormal", query="last", data_seed=int(rng.integers(1 << 30)))
    one = task.sample(1, step=0)
    orbit = _orbit(one, D)
    gram, three = InductionGram19Objective.orthonormal(N), InductionThreeParamObjective(N)

    model = DisentangledTransformer(dim=D)
    with torch.no_grad():
        for w, v in zip((model.W1, model.W2, model.W3), embed(_random_theta(rng, 0.5), D), strict=True):
            w.copy_(torch.from_numpy(v))
    task.loss(model, one).backward()
    assert max(subspace_report(model.W1.grad, model.W2.grad, model.W3.grad)["residual"]) > 1e-2

    eta = 0.1                                    # the paper's time per step (lr λ/D on θ)
    live = np.isin(np.arange(19), THREE_PARAM_INDEX)
    cases = ((False, gram, emergence.gram19_emergence_times(N)), (True, three, emergence.emergence_times(N)))
    for restricted, obj, flow in cases:
        model = DisentangledTransformer(dim=D)
        theta = np.zeros(obj.size())
        first, residual, step = {}, 0.0, 0
        while len(first) < 3:
            model.zero_grad()
            task.loss(model, orbit).backward()
            grads = [w.grad for w in (model.W1, model.W2, model.W3)]
            if restricted:     # training only α₃, β₂, γ₃: the step masked to their 3 directions
                g = project(*grads)
                grads = [torch.from_numpy(x) for x in embed(np.where(live, g, 0.0), D)]
            with torch.no_grad():
                for w, g in zip((model.W1, model.W2, model.W3), grads, strict=True):
                    w -= eta * D * g
            theta = theta - eta * obj.loss_grad(theta)[1]
            step += 1
            rep = subspace_report(model.W1.detach(), model.W2.detach(), model.W3.detach())
            residual = max(residual, *rep["residual"])
            want = embed_three_param(theta) if restricted else theta
            np.testing.assert_allclose(rep["theta"], want, rtol=0, atol=1e-12 * max(1, np.abs(want).max()))
            for key, name in (("T_gamma", "gamma3"), ("T_beta", "beta2"), ("T_alpha", "alpha3")):
                if key not in first and rep["theta"][NAMES.index(name)] >= 0.5:
                    first[key] = step * eta
        assert residual < 1e-12, residual
        for key, t in first.items():      # GD is the flow's Euler scheme: O(η) apart (η = 0.1)
            assert abs(t - flow[key]) <= 0.03 * flow[key] + 2 * eta, (restricted, key, t, flow[key])
