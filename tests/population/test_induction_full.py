"""The full disentangled model (28D² weights) on its exact population gradient (Theorem 1): the
loss is the torch model's population loss (Monte Carlo within 4 s.e.), the gradient is D ∇_W L
inside the 19-dim subspace (finite differences of L along each B_k), off-subspace weights are
refused, and the CLI's `--model disentangled --method gd|flow` follows the Gram19 objective (gd: the
full-matrix learning rate λ, θ-rate λ/D; flow: record time 2D × the θ-coordinates' paper time)."""

import json

import numpy as np
import pytest
import torch

from fastattn.analysis.pseudo_params import embed
from fastattn.cli import main
from fastattn.models.disentangled import DisentangledTransformer
from fastattn.population import objective_for
from fastattn.population.induction import InductionGram19Objective
from fastattn.population.induction_full import DisentangledFullObjective
from fastattn.tasks import InductionPairs

D, N = 6, 3


def _theta(seed: int, scale: float = 0.4) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=19) * scale


def _flat(theta: np.ndarray) -> np.ndarray:
    return np.concatenate([w.ravel() for w in embed(theta, D)])


def test_loss_is_the_models_loss_on_sampled_orthonormal_data():
    """At structured weights every orthonormal sequence has the same loss (the data symmetries of
    Theorem 1), so the torch model's loss on any sampled batch is the population loss."""
    theta = _theta(0)
    task = InductionPairs(D, N, data="orthonormal", query="last", reduction="sum", data_seed=4)
    model = DisentangledTransformer(dim=D)
    obj = objective_for(task, model)
    assert isinstance(obj, DisentangledFullObjective)
    exact = obj.loss_grad(_flat(theta))[0]
    with torch.no_grad():
        for w, v in zip((model.W1, model.W2, model.W3), embed(theta, D), strict=True):
            w.copy_(torch.from_numpy(v))
        for step in range(3):
            b = task.sample(64, step)
            per = [task.loss(model, type(b)(b.X[i:i + 1], b.y[i:i + 1], b.q[i:i + 1])).item()
                   for i in range(64)]
            np.testing.assert_allclose(per, exact, rtol=1e-12)


def test_gradient_is_the_subspace_gradient():
    obj, theta = DisentangledFullObjective(D, N), _theta(1)
    w = _flat(theta)
    loss, g = obj.loss_grad(w)
    assert loss == pytest.approx(InductionGram19Objective.orthonormal(N).loss_grad(theta)[0], rel=1e-14)
    np.testing.assert_allclose(g, obj.E @ (obj.E.T @ g) / D, atol=1e-12)      # inside the subspace
    eps = 1e-6
    for k in range(19):
        b = obj.E[:, k]                                       # B_k, ‖B_k‖² = D
        fd = (obj.loss_grad(w + eps * b)[0] - obj.loss_grad(w - eps * b)[0]) / (2 * eps)
        assert g @ b == pytest.approx(fd, rel=1e-6, abs=1e-9), k


def test_off_subspace_weights_are_refused():
    w = _flat(_theta(2)) + 1e-2 * np.random.default_rng(0).normal(size=28 * D * D)
    with pytest.raises(ValueError, match="19-dimensional subspace"):
        DisentangledFullObjective(D, N).loss_grad(w)


@pytest.mark.parametrize("method", ["gd", "flow"])
def test_cli_trains_the_full_model_exactly_in_paper_time(tmp_path, method):
    extra = (["--lr", "0.5", "--steps", "40"] if method == "gd" else ["--t-end", "20"])
    args = ["train", "--task", "induction", "--model", "disentangled", "--dim", str(D), "--context",
            str(N), "--data", "orthonormal", "--query", "last", "--reduction", "sum", "--mask", "strict",
            "--init-scale", "0", "--method", method, *extra,
            "--out", str(tmp_path), "--quiet"]
    assert main(args) == 0
    rec = np.load(tmp_path / "run.npz")
    assert json.loads((tmp_path / "run.json").read_text())["config"]["model"]["params"] == "full"
    gram, theta = InductionGram19Objective.orthonormal(N), np.zeros(19)
    obj = DisentangledFullObjective(D, N)
    if method == "gd":                  # full-matrix lr λ = 0.5: θ ← θ − (λ/D) ∇_θ L
        for _ in range(40):
            theta = theta - 0.5 / D * gram.loss_grad(theta)[1]
        assert rec["step"][-1] == 40
    else:                               # record time 20 is the paper's 20/(2D); the integrators'
        from fastattn.population import FlowOptions  # time for θ̇ = −∇_θ L is 2 × paper time
        from fastattn.population.api import integrate

        assert obj.paper_time(rec["time"][-1]) == pytest.approx(20.0 / (2 * D))
        theta = integrate(gram, theta, FlowOptions(method="rk45", t_end=2 * 20.0 / (2 * D), rtol=1e-11,
                                                   atol=1e-13)).final_params
    np.testing.assert_allclose(obj.theta(rec["params"][-1]), theta, atol=1e-6)
    assert rec["loss"][-1] == pytest.approx(gram.loss_grad(theta)[0], rel=1e-6)


@pytest.mark.parametrize("D", [2, 4, 6])
def test_basis_matrix_equals_the_models_pseudo_weights(D):
    """The objective's numpy basis (population imports no models) equals the model's own B_k."""
    from fastattn.analysis.pseudo_params import embed
    from fastattn.population.induction_full import basis_matrix

    ref = np.stack([np.concatenate([w.ravel() for w in embed(e, D)]) for e in np.eye(19)], axis=1)
    np.testing.assert_array_equal(basis_matrix(D), ref)
