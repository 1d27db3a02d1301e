"""The exact autoregressive objectives (Sander et al. 2024) against independent references: an exact
Parseval grid (a uniform phase grid reproduces the expectation of a Laurent polynomial exactly),
Monte Carlo of the DIAG model's forward within 4 standard errors, the spec §10 worked values,
finite differences (the shared suite, tests/population/test_objective_suite.py) and the zero-loss
solutions of Props. 3 and 6 / Lemma 3."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from fastattn.models import ARDiag, ARDiagConfig, ARPEOnly
from fastattn.models.autoregressive import diag_forward
from fastattn.population import AutoRegressiveObjective, PEOnlyObjective, objective_for
from fastattn.tasks import AutoRegressive
from fastattn.theory import sander2024 as th
from helpers import assert_mc_agrees

C_EX = np.array([[1.0, 2.0], [3.0, 4.0]])
P_EX = np.array([0.5, -1.0, 2.0])


def grid_row_loss(C: np.ndarray, p: np.ndarray, context: str) -> float:
    """E‖Σ_t p_t [C λ^{t−T+1}] ⊙ λ^{t−1} − λ^T‖² on an exact uniform phase grid (M points per
    independent phase, M > the largest exponent spread)."""
    d, T = C.shape[0], p.size
    M = 4 * T + 8
    n_free = d // 2 if context == "orthogonal" else d
    grid = np.exp(2j * np.pi * np.arange(M) / M)
    pts = np.array(list(itertools.product(grid, repeat=n_free)))             # [M^n, n_free]
    lam = np.repeat(pts, 2, axis=1) if context == "orthogonal" else pts
    if context == "orthogonal":
        lam[:, 1::2] = lam[:, 1::2].conj()
    states = lam[:, None, :] ** np.arange(T)[None, :, None]                  # s_1..s_T
    out = diag_forward(torch.from_numpy(states), torch.from_numpy(C),
                       torch.from_numpy(np.pad(p, (0, 0))[None].repeat(T, 0))).numpy()
    pred = out[:, T - 2]                                                      # context length T
    return float(np.mean(np.sum(np.abs(pred - lam ** T) ** 2, axis=-1)))


def _C_objective(context: str, d: int, tmax: int) -> AutoRegressiveObjective:
    return AutoRegressiveObjective(context, ARDiagConfig(d, 1, tmax), factored=False)


def _CP(C: np.ndarray, P: np.ndarray) -> np.ndarray:
    return np.concatenate([C.ravel(), P.ravel()])


def test_spec_worked_values_and_the_printed_prop4():
    """Spec §10: l_U = 167.5, l_O = 58.5 at C = [[1,2],[3,4]], p = (0.5, −1, 2); Prop. 4 as printed
    gives 197.5, and the exact grid expectation sides with the corrected formula."""
    assert th.unitary_row_loss(C_EX, P_EX) == pytest.approx(167.5, rel=1e-14)
    assert th.orthogonal_row_loss(C_EX, P_EX) == pytest.approx(58.5, rel=1e-14)
    assert th.unitary_row_loss(C_EX, P_EX, paper=True) == pytest.approx(197.5, rel=1e-14)
    assert grid_row_loss(C_EX, P_EX, "unitary") == pytest.approx(167.5, rel=1e-12)
    assert grid_row_loss(C_EX, P_EX, "orthogonal") == pytest.approx(58.5, rel=1e-12)
    # the core: row T = 3 alone is the loss of P with only row 1 (T = 3) set, minus row T = 2's
    P = np.zeros((3, 3))
    P[1] = P_EX
    for context, want in (("unitary", 167.5), ("orthogonal", 58.5), ("unitary_paper", 197.5)):
        row2 = th.unitary_row_loss(C_EX, P[0, :2])  # p = 0 at T = 2: l = d, any context
        assert _C_objective(context, 2, 3).loss_grad(_CP(C_EX, P))[0] == pytest.approx(want + row2)


@pytest.mark.parametrize("context", ["unitary", "orthogonal"])
def test_core_equals_the_grid_expectation_at_random_points(context, rng):
    d, tmax = 2, 5
    C, P = rng.standard_normal((d, d)), rng.standard_normal((tmax, tmax))
    want = sum(grid_row_loss(C, P[T - 2, :T], context) for T in range(2, tmax + 1))
    assert _C_objective(context, d, tmax).loss_grad(_CP(C, P))[0] == pytest.approx(want, rel=1e-11)
    assert th.population_loss(C, P, context) == pytest.approx(want, rel=1e-11)


@pytest.mark.parametrize("context", ["unitary", "orthogonal"])
def test_core_equals_monte_carlo_of_the_model_within_its_standard_errors(context):
    """The exact loss of random (A, B, P) against the DIAG model's forward on sampled sequences."""
    d, H, tmax, n = 4, 3, 6, 20000
    task = AutoRegressive(dim=d, context=tmax, context_dist=context, data_seed=5)
    model = ARDiag(d, H, tmax, init_scale=0.5, init_seed=2)
    batch = task.sample(n, 0)
    with torch.no_grad():
        per_seq = (model.predict(batch.tokens) - batch.targets).abs().square().sum((1, 2)).numpy()
    exact = objective_for(task, model).loss_grad(model.to_flat())[0]
    se = per_seq.std(ddof=1) / np.sqrt(n)
    assert_mc_agrees(per_seq.mean(), se, exact)
    with torch.no_grad():
        assert float(task.loss(model, batch)) == pytest.approx(per_seq.mean(), rel=1e-12)


def test_factored_and_merged_parametrizations_agree(rng):
    d, H, tmax = 4, 3, 5
    A, B, P = rng.standard_normal((H, d)), rng.standard_normal((H, d)), rng.standard_normal((tmax, tmax))
    for context in ("unitary", "orthogonal", "unitary_paper"):
        f = AutoRegressiveObjective(context, ARDiagConfig(d, H, tmax))
        m = AutoRegressiveObjective(context, ARDiagConfig(d, H, tmax), factored=False)
        Lf, gf = f.loss_grad(np.concatenate([A.ravel(), B.ravel(), P.ravel()]))
        Lm, gm = m.loss_grad(_CP(B.T @ A, P))
        assert Lf == pytest.approx(Lm, rel=1e-13)
        gC = gm[:d * d].reshape(d, d)
        np.testing.assert_allclose(gf[:H * d].reshape(H, d), B @ gC, atol=1e-11)   # chain rule
        np.testing.assert_allclose(gf[H * d:2 * H * d].reshape(H, d), A @ gC.T, atol=1e-11)
        np.testing.assert_allclose(gf[2 * H * d:], gm[d * d:], atol=1e-11)
        assert gm[d * d:].reshape(tmax, tmax)[tmax - 1].tolist() == [0.0] * tmax  # unread row


@pytest.mark.parametrize("T", [2, 3, 7])
def test_zero_loss_solutions(T):
    """Prop. 3 (unitary, H = d), Lemma 3 (orthogonal, H = d/2) and a Prop. 6 family member with
    (p_T, p_{T−1}) = (1.7, 0.4) have loss 0 exactly, in the core and in the sampled model."""
    d = 4
    A, B, P = th.prop3_parameters(d, T, p_last=1.3)
    flat = np.concatenate([A.ravel(), B.ravel(), P.ravel()])
    for context in ("unitary", "orthogonal"):
        objective = AutoRegressiveObjective(context, ARDiagConfig(d, d, T))
        assert objective.loss_grad(flat)[0] == pytest.approx(0, abs=1e-12)
    A, B, P = th.lemma3_parameters(d, T)
    flat = np.concatenate([A.ravel(), B.ravel(), P.ravel()])
    obj = AutoRegressiveObjective("orthogonal", ARDiagConfig(d, d // 2, T))
    assert obj.loss_grad(flat)[0] == pytest.approx(0, abs=1e-12)
    assert AutoRegressiveObjective("unitary", ARDiagConfig(d, d // 2, T)).loss_grad(flat)[0] > 1
    model = ARDiag(d, d // 2, T).load_flat(flat)
    batch = AutoRegressive(dim=d, context=T, context_dist="orthogonal").sample(64, 0)
    with torch.no_grad():
        assert float((model.predict(batch.tokens) - batch.targets).abs().max()) < 1e-12
    C, P = th.prop6_parameters(d, T, 1.7, 0.4)
    assert _C_objective("orthogonal", d, T).loss_grad(_CP(C, P))[0] == pytest.approx(0, abs=1e-12)


def test_pe_only_objective_matches_prop7_and_monte_carlo():
    tmax, mu, n = 6, 3.0, 40000
    task = AutoRegressive(dim=1, context=tmax, context_dist="positional", mu=mu, data_seed=3)
    model = ARPEOnly(1, 1, tmax, init_scale=0.5, init_seed=1)
    obj = objective_for(task, model)
    assert isinstance(obj, PEOnlyObjective)
    exact = obj.loss_grad(model.to_flat())[0]
    assert exact == pytest.approx(th.pe_loss(model.P.detach().numpy(), mu), rel=1e-13)
    batch = task.sample(n, 0)
    with torch.no_grad():
        per_seq = (model.predict(batch.tokens) - batch.targets).abs().square().sum((1, 2)).numpy()
    se = per_seq.std(ddof=1) / np.sqrt(n)
    assert_mc_agrees(per_seq.mean(), se, exact)
    # under 𝒞_U and 𝒞_O the PE-only rows are l_U(I, p), l_O(I, p)
    rng = np.random.default_rng(0)
    P = rng.standard_normal((tmax, tmax))
    for context in ("unitary", "orthogonal"):
        pe = PEOnlyObjective(context, tmax, d=2)
        assert pe.loss_grad(P.ravel())[0] == pytest.approx(th.population_loss(np.eye(2), P, context))


def test_prop7_matrix():
    """H = I for μ ∈ {1, 2, 4} (4/μ an integer); μ = 8, T = 3 has 2/π off the diagonal; a Monte
    Carlo quadratic form at T = 8, μ = 3 (spec §10: 11.1088)."""
    for mu in (1.0, 2.0, 4.0):
        np.testing.assert_allclose(th.pe_hessian(7, mu), np.eye(7), atol=1e-15)
    np.testing.assert_allclose(th.pe_hessian(3, 8.0), [[1, 2 / np.pi, 0], [2 / np.pi, 1, 2 / np.pi],
                                                       [0, 2 / np.pi, 1]], atol=1e-15)
    eig = np.linalg.eigvalsh(th.pe_hessian(30, 100.0))[::-1]
    np.testing.assert_allclose(eig[:3], [21.4792, 7.825, 0.677], rtol=2e-3)  # spec §5.10 table


def test_objective_errors_name_the_setting():
    task = AutoRegressive(dim=4, context=5, representation="real")
    with pytest.raises(ValueError, match="representation='real'"):
        objective_for(task, ARDiag(4, 2, 5))
    with pytest.raises(ValueError, match="context \\(T_max=6\\)"):
        objective_for(AutoRegressive(dim=4, context=5), ARDiag(4, 2, 6))
    with pytest.raises(ValueError, match="context must be one of"):
        AutoRegressiveObjective("haar", ARDiagConfig(2, 1, 3))
