"""AUG-1's exact loss on commuting unitary contexts (Prop. 2, spec §5.3) against independent truths:
Prop. 2's optimum (ℓ*, zero gradient at a3 b1 = η*), Monte Carlo of the torch `ARAugmented` on
the task's own samples (4 s.e.), finite differences; the CLI's `--model aug --method gd|flow`
reaches ℓ*, and other contexts name what has no closed form."""

import numpy as np
import pytest
import torch

from fastattn.cli import main
from fastattn.models import ARAugmentedConfig
from fastattn.models.base import build_model
from fastattn.population import objective_for
from fastattn.population.autoregressive_augmented import AugmentedUnitaryObjective
from fastattn.tasks import AutoRegressive
from fastattn.theory import sander2024 as theory
from helpers import assert_mc_agrees


@pytest.mark.parametrize("s0", ["zero", "backward"])
@pytest.mark.parametrize("d, tmax", [(1, 5), (3, 7)])
def test_prop_2_optimum(s0, d, tmax):
    eta, l_star = theory.augmented_optimum(d, tmax, s0)
    x = np.zeros(6)
    x[2], x[4] = eta, 1.0                                     # a3 b1 = η*
    loss, grad = AugmentedUnitaryObjective(d, tmax, s0).loss_grad(x)
    assert loss == pytest.approx(l_star, rel=1e-13)
    assert np.abs(grad).max() < 1e-12


@pytest.mark.parametrize("s0", ["zero", "backward"])
def test_monte_carlo_and_finite_differences(s0):
    d, tmax = 3, 6
    x = np.random.default_rng(1).normal(size=6) * 0.3
    task = AutoRegressive(dim=d, context=tmax, context_dist="unitary", encoding="augmented", s0=s0,
                          data_seed=11)
    model = build_model(ARAugmentedConfig(d, 1))
    objective = objective_for(task, model)
    loss, grad = objective.loss_grad(x)
    with torch.no_grad():
        model.a.copy_(torch.from_numpy(x[:4]))
        model.b.copy_(torch.from_numpy(x[4:]))
        per = []
        for step in range(10):
            b = task.sample(8000, step)
            per.append((model.predict(b.tokens) - b.targets).abs().square().sum((-1, -2)))
    v = torch.cat(per).numpy()
    se = v.std() / np.sqrt(v.size)
    assert_mc_agrees(v.mean(), se, loss)
    eps = 1e-6
    fd = np.array([(objective.loss_grad(x + eps * e)[0] - objective.loss_grad(x - eps * e)[0]) / (2 * eps)
                   for e in np.eye(6)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_cli_runs_aug_exactly_to_prop_2(tmp_path):
    """The exact flow reaches ℓ*; exact GD's records are the objective at its parameters, falling."""
    base = ["train", "--task", "autoregressive", "--model", "aug", "--encoding", "augmented",
            "--context-dist", "unitary", "--representation", "complex", "--s1", "ones", "--dim", "3",
            "--context", "7", "--init-scale", "0.1", "--quiet"]
    l_star = theory.augmented_optimum(3, 7, "zero")[1]
    assert main([*base, "--method", "flow", "--t-end", "200", "--out", str(tmp_path / "flow")]) == 0
    assert np.load(tmp_path / "flow" / "run.npz")["loss"][-1] == pytest.approx(l_star, rel=1e-4)
    gd = ["--method", "gd", "--lr", "0.005", "--steps", "2000", "--out", str(tmp_path / "gd")]
    assert main([*base, *gd]) == 0
    rec = np.load(tmp_path / "gd" / "run.npz")
    objective = AugmentedUnitaryObjective(3, 7, "zero")
    assert rec["loss"][-1] == pytest.approx(objective.loss_grad(rec["params"][-1])[0], rel=1e-12)
    assert l_star < rec["loss"][-1] < rec["loss"][0]


def test_other_contexts_name_the_missing_closed_form():
    model = build_model(ARAugmentedConfig(2, 1))
    with pytest.raises(ValueError, match="no closed form"):
        objective_for(AutoRegressive(dim=2, context=4, context_dist="orthogonal", encoding="augmented"),
                      model)
    with pytest.raises(ValueError, match="encoding='plain'"):
        objective_for(AutoRegressive(dim=2, context=4, context_dist="unitary"), model)
