"""Every trainer method ends its trajectory, its run record and its model at the state it stopped
in, whatever stopped it (issue 13 item 1): target loss, gradient tolerance, budgets, divergence,
interrupt, and the planned end."""

import numpy as np
import pytest

from fastattn import population
from fastattn.models import SeparateKQ
from fastattn.models.linear_attention import SeparateConfig
from fastattn.tasks import LinearRegression
from fastattn.training import TrainConfig, Trajectory, train
from fastattn.training import flow as flow_module

TASK = LinearRegression(3, context=7, spectrum=[0.5, 0.3, 0.2], rotate=True, data_seed=0)


def exact_loss(params):
    return population.loss_and_grad(SeparateConfig(3, 2), params, TASK.moments())[0]


def assert_ends_at_final_state(traj: Trajectory, model, tmp_path, exact: bool) -> None:
    """Last loss record, last snapshot, model and saved record all hold the final state."""
    np.testing.assert_array_equal(traj.final_params, model.to_flat())
    assert traj.time[-1] == traj.snapshot_time[-1]
    if exact:
        assert traj.final_loss == pytest.approx(exact_loss(traj.final_params), rel=1e-12)
    if "population" in traj.test_loss:
        assert traj.test_loss["population"][-1] == pytest.approx(exact_loss(traj.final_params),
                                                                 rel=1e-12)
    back = Trajectory.load(traj.save(tmp_path / "run"))
    assert back.status == traj.status and back.final_loss == traj.final_loss
    np.testing.assert_array_equal(back.final_params, traj.final_params)


def model():
    return SeparateKQ(3, 2, init_scale=0.3, init_seed=1)


@pytest.mark.parametrize(("kwargs", "status"), [
    ({"method": "flow", "t_end": 1e4, "target_loss": 0.6}, "target_loss"),
    ({"method": "flow", "t_end": 1e6, "grad_tol": 1e-3}, "converged"),
    ({"method": "flow", "t_end": 50.0}, "t_end"),
    ({"method": "gd", "lr": 0.05, "steps": 5000, "target_loss": 0.6}, "target_loss"),
    ({"method": "gd", "lr": 0.05, "steps": 20000, "grad_tol": 1e-3}, "converged"),
    ({"method": "gd", "lr": 1e4, "steps": 200}, "diverged"),
    ({"method": "sgd", "lr": 0.05, "steps": 2000, "batch_size": 64, "target_loss": 0.6},
     "target_loss"),
    ({"method": "sgd", "lr": 1e4, "steps": 200, "batch_size": 64}, "diverged"),
    ({"method": "adam", "lr": 0.01, "steps": 2000, "batch_size": 64, "target_loss": 0.6},
     "target_loss"),
    ({"method": "adam", "lr": 1e6, "steps": 200, "batch_size": 64}, "diverged"),
    ({"method": "adam", "lr": 0.01, "steps": 37, "batch_size": 64}, "steps"),
])
def test_every_stop_ends_the_record_at_the_state_it_stopped_in(kwargs, status, tmp_path):
    m = model()
    traj = train(m, TASK, n_records=7, n_snapshots=3, **kwargs)
    assert traj.status == status
    assert np.all(np.isfinite(traj.loss)) and np.all(np.isfinite(traj.final_params))
    if status == "target_loss":
        assert traj.final_loss <= 0.6 < traj.loss[0]
    assert_ends_at_final_state(traj, m, tmp_path, exact=kwargs["method"] in ("flow", "gd"))


@pytest.mark.parametrize("limit", [{"max_evals": 40}, {"max_seconds": 1e-9}])
def test_budget_stops_end_at_the_final_state(limit, tmp_path):
    m = model()
    cfg = TrainConfig(method="flow", t_end=1e5, integrator="rk45", n_records=5, n_snapshots=3)
    traj = flow_module.population_runs([m], [TASK], cfg, **limit)[0][0]
    assert traj.status == next(iter(limit))
    assert_ends_at_final_state(traj, m, tmp_path, exact=True)


class _Interrupting(population.Objective):
    """The pair's objective, raising KeyboardInterrupt (as Ctrl-C does) at evaluation `after`."""

    def __init__(self, inner, after: int):
        super().__init__()
        self.inner, self.after, self.calls = inner, after, 0

    def size(self):
        return self.inner.size()

    def loss_grad(self, params):
        self.calls += 1
        if self.calls == self.after:
            raise KeyboardInterrupt
        return self.inner.loss_grad(params)


@pytest.mark.parametrize("kwargs", [{"method": "flow", "t_end": 1e6},
                                    {"method": "gd", "lr": 0.05, "steps": 10_000}])
def test_an_interrupted_exact_run_ends_at_its_last_state(kwargs, tmp_path, monkeypatch):
    real = population.objective_for
    monkeypatch.setattr(population, "objective_for",
                        lambda task, model: _Interrupting(real(task, model), after=60))
    m = model()
    traj = train(m, TASK, n_records=7, n_snapshots=3, **kwargs)
    assert traj.status == "interrupted" and traj.time[-1] > 0
    assert_ends_at_final_state(traj, m, tmp_path, exact=True)


@pytest.mark.parametrize("method", ["sgd", "adam"])
def test_an_interrupted_sampled_run_ends_at_its_last_state(method, tmp_path, monkeypatch):
    real, interrupted = LinearRegression.sample, []

    def sample(self, batch_size, step, **kw):
        if step == 23 and not interrupted:
            interrupted.append(step)
            raise KeyboardInterrupt
        return real(self, batch_size, step, **kw)

    monkeypatch.setattr(LinearRegression, "sample", sample)
    m = model()
    traj = train(m, TASK, method=method, lr=0.01, steps=1000, batch_size=32, n_records=5,
                 n_snapshots=3)
    monkeypatch.undo()
    assert traj.status == "interrupted" and traj.step[-1] == 23
    assert_ends_at_final_state(traj, m, tmp_path, exact=False)
    again = model()
    ref = train(again, TASK, method=method, lr=0.01, steps=23, batch_size=32, n_records=5)
    np.testing.assert_array_equal(traj.final_params, ref.final_params)
    assert traj.final_loss == ref.final_loss
