"""The DIAG model's exact loss on positional contexts 𝒲(μ) (spec §5.11) against independent truths:
l_U at μ = 1, the PE-only loss of Prop. 7 at C = I, Monte Carlo of the torch model on the task's own
samples (within 4 standard errors), finite differences; and the CLI runs it with gd/flow while Haar
keeps a one-line "no closed form" error."""

import json

import numpy as np
import pytest
import torch

from fastattn.cli import main
from fastattn.models import ARDiagConfig
from fastattn.models.base import build_model
from fastattn.population import objective_for
from fastattn.population.autoregressive import AutoRegressiveObjective
from fastattn.population.autoregressive_positional import PositionalDiagObjective, loss_grad_cp
from fastattn.tasks import AutoRegressive
from fastattn.theory import sander2024 as theory
from helpers import assert_mc_agrees

D, H, TMAX = 3, 2, 6


def _params(seed: int, scale: float = 0.5) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=2 * H * D + TMAX * TMAX) * scale


def test_mu_one_is_the_unitary_loss():
    x = _params(0)
    assert PositionalDiagObjective(ARDiagConfig(D, H, TMAX), 1.0).loss_grad(x)[0] == pytest.approx(
        AutoRegressiveObjective("unitary", ARDiagConfig(D, H, TMAX)).loss_grad(x)[0], rel=1e-12)
    np.testing.assert_allclose(PositionalDiagObjective(ARDiagConfig(D, H, TMAX), 1.0).loss_grad(x)[1],
                               AutoRegressiveObjective("unitary", ARDiagConfig(D, H, TMAX)).loss_grad(x)[1],
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mu", [1.5, 2.5, 7.0])
def test_identity_c_is_the_pe_only_loss_of_prop_7(mu):
    P = np.random.default_rng(1).normal(size=(TMAX, TMAX))
    assert loss_grad_cp(np.eye(D), P, mu)[0] == pytest.approx(theory.pe_loss(P, mu, D), rel=1e-12)


def test_minimum_is_zero_at_prop_3():
    P = np.zeros((TMAX, TMAX))
    P[np.arange(TMAX - 1), np.arange(1, TMAX)] = 1.0
    loss, gC, gP = loss_grad_cp(np.eye(D), P, 2.5)
    assert 0.0 <= loss < 1e-12
    assert np.abs(gC).max() < 1e-10 and np.abs(gP).max() < 1e-10


@pytest.mark.parametrize("mu", [1.7, 3.0])
def test_monte_carlo_of_the_model_on_the_tasks_samples(mu):
    x = _params(2)
    task = AutoRegressive(dim=D, context=TMAX, context_dist="positional", mu=mu, data_seed=5)
    model = build_model(ARDiagConfig(D, H, TMAX))
    objective = objective_for(task, model)
    assert isinstance(objective, PositionalDiagObjective)
    exact = objective.loss_grad(x)[0]
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.as_tensor(x), model.parameters())
        per_seq = []
        for step in range(10):
            b = task.sample(4000, step)
            per_seq.append((model.predict(b.tokens) - b.targets).abs().square().sum((-1, -2)))
    v = torch.cat(per_seq).numpy()
    se = v.std() / np.sqrt(v.size)
    assert_mc_agrees(v.mean(), se, exact)


def test_gradient_matches_finite_differences():
    objective, x = PositionalDiagObjective(ARDiagConfig(D, H, TMAX), 2.5), _params(3)
    g = objective.loss_grad(x)[1]
    eps = 1e-6
    fd = np.array([(objective.loss_grad(x + eps * e)[0] - objective.loss_grad(x - eps * e)[0]) / (2 * eps)
                   for e in np.eye(x.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_cli_trains_positional_diag_exactly_and_haar_has_no_closed_form(tmp_path, capsys):
    base = ["train", "--task", "autoregressive", "--model", "diag", "--dim", "2", "--heads", "2",
            "--context", "5", "--init-scale", "0.3", "--quiet"]
    assert main([*base, "--context-dist", "positional", "--mu", "2", "--method", "gd", "--lr", "0.01",
                 "--steps", "50", "--out", str(tmp_path / "gd")]) == 0
    loss = np.load(tmp_path / "gd" / "run.npz")["loss"]
    first = np.load(tmp_path / "gd" / "run.npz")["params"][0]
    task = AutoRegressive(dim=2, context=5, context_dist="positional", mu=2.0)
    assert loss[0] == pytest.approx(objective_for(task, build_model(ARDiagConfig(2, 2, 5)))
                                    .loss_grad(first)[0], rel=1e-12)
    assert loss[-1] < loss[0]
    assert json.loads((tmp_path / "gd" / "run.json").read_text())["status"] == "steps"
    assert main([*base, "--context-dist", "haar", "--representation", "real", "--method", "flow",
                 "--t-end", "1", "--out", str(tmp_path / "haar")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--context-dist haar has no closed form" in err[0] and "sgd" in err[0]
