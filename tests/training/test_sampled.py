import json

import numpy as np
import pytest
import torch

from fastattn.models import MergedKQ, SeparateKQ, SoftmaxMergedKQ
from fastattn.tasks import LinearRegression
from fastattn.training import TrainConfig, Trajectory, rebuild_run, train

TASK = LinearRegression(3, context=7, spectrum=[0.5, 0.3, 0.2], rotate=True, data_seed=0)


def _manual_sgd(model, task, lr, steps, batch_size):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for k in range(steps + 1):
        b = task.sample(batch_size, k)
        loss = ((b.y_q - model(b.x, b.y, b.x_q)) ** 2).mean()
        losses.append(loss.item())
        if k == steps:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    return np.asarray(losses)


def test_online_sgd_equals_a_plain_torch_loop_and_time_is_two_eta_k():
    lr, steps = 0.05, 40
    a = SeparateKQ(3, 3, init_scale=0.5, init_seed=2)
    b = SeparateKQ(3, 3, init_scale=0.5, init_seed=2)
    traj = train(a, TASK, method="sgd", lr=lr, steps=steps, batch_size=32, n_records=steps)
    want = _manual_sgd(b, TASK, lr, steps, 32)
    np.testing.assert_allclose(traj.loss, want[traj.step], rtol=1e-12)
    np.testing.assert_allclose(traj.time, 2 * lr * traj.step)
    np.testing.assert_allclose(traj.final_params, b.to_flat(), rtol=1e-12)
    assert traj.status == "steps" and traj.step[-1] == steps


def test_full_batch_adam_on_a_fixed_dataset_reduces_the_loss():
    m = MergedKQ(3, 4, init_scale=0.3)
    traj = train(m, TASK, method="adam", lr=0.01, steps=200, dataset_size=256)
    assert traj.loss[-1] < 0.5 * traj.loss[0]
    assert "population" in traj.test_loss and len(traj.test_loss["population"]) == len(traj.loss)


def test_divergence_stops_and_keeps_the_last_finite_state():
    m = MergedKQ(3, 4, init_scale=3.0)
    traj = train(m, TASK, method="sgd", lr=50.0, steps=500, batch_size=16)
    assert traj.status == "diverged"
    assert np.all(np.isfinite(traj.final_params))
    assert np.all(np.isfinite(traj.loss))


def test_in_context_and_in_weight_test_sets_are_recorded():
    task = LinearRegression(3, context=7, fixed_task_fraction=0.6, data_seed=0)
    traj = train(SoftmaxMergedKQ(3, 2), task, method="sgd", lr=0.05, steps=20, batch_size=16,
                 test_size=64, eval_seed=9)
    assert set(traj.test_loss) == {"in_context", "in_weight"}
    assert all(len(v) == len(traj.loss) for v in traj.test_loss.values())
    with pytest.raises(ValueError, match="eval_seed"):
        train(SoftmaxMergedKQ(3, 2), task, method="sgd", lr=0.05, steps=2, test_size=8, eval_seed=0)


def test_next_token_loss_trains():
    traj = train(MergedKQ(3, 2, init_scale=0.5), TASK, method="adam", lr=0.02, steps=60,
                 batch_size=64, loss="next_token")
    assert traj.loss[-1] < traj.loss[0]
    with pytest.raises(ValueError, match=r"loss='last'.*linear_regression"):
        train(MergedKQ(3, 2), TASK, method="sgd", lr=0.1, steps=2, loss="last")


def test_run_record_round_trip_rebuilds_the_run(tmp_path):
    m = SeparateKQ(3, 2, init_seed=4, init_scale=0.4)
    traj = train(m, TASK, method="sgd", lr=0.05, steps=10, batch_size=8)
    path = traj.save(tmp_path / "run")
    meta = json.loads(path.read_text())
    assert meta["config"]["task"]["kind"] == "linear_regression"
    assert meta["config"]["model"] == {"kind": "separate", "dim": 3, "heads": 2, "rank": 1,
                                       "init_scale": 0.4, "init_seed": 4, "init_scheme": "paper",
                                       "dtype": "float64"}
    assert meta["meta"]["versions"]["torch"] == torch.__version__
    assert "git_revision" in meta["meta"]
    back = Trajectory.load(path)
    np.testing.assert_array_equal(back.loss, traj.loss)
    np.testing.assert_array_equal(back.params, traj.params)
    rebuilt_task, rebuilt, cfg = rebuild_run(meta["config"])
    assert rebuilt.config == m.config and rebuilt_task.kind == TASK.kind
    again = train(rebuilt, rebuilt_task, cfg)
    np.testing.assert_array_equal(again.loss, traj.loss)
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"method": "sgd", "lr": 0.0, "steps": 3}, "lr"),
        ({"method": "sgd", "lr": -1.0, "steps": 3}, "lr"),
        ({"method": "gd", "lr": 0.1}, "steps"),
        ({"method": "flow"}, "t_end"),
        ({"method": "flow", "t_end": -1.0}, "t_end"),
        ({"method": "flow", "t_end": 1.0, "integrator": "euler2"}, "integrator"),
        ({"method": "newton"}, "method"),
        ({"method": "gd", "lr": 0.1, "steps": 3, "loss": "next_token"}, "next_token"),
        ({"method": "flow", "t_end": 1.0, "record_every": 2}, "record_every"),
        ({"method": "sgd", "lr": 0.1, "steps": 3, "snapshot_every": 0}, "snapshot_every"),
    ],
)
def test_bad_train_config_raises(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        TrainConfig(**kwargs)


def test_nan_weights_and_dim_mismatch_are_rejected():
    m = MergedKQ(3, 2)
    with torch.no_grad():
        m.U[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"'U'.*NaN"):
        train(m, TASK, method="sgd", lr=0.1, steps=2)
    with pytest.raises(ValueError, match="dim"):
        train(MergedKQ(2, 2), TASK, method="sgd", lr=0.1, steps=2)


def test_stats_sampler_trains_linear_models_without_token_tensors():
    m = SeparateKQ(3, 3, init_scale=0.5, init_seed=1)
    traj = train(m, TASK, method="sgd", lr=0.1, steps=300, batch_size=256, sampler="stats")
    assert traj.test_loss["population"][-1] < 0.9 * traj.test_loss["population"][0]
    with pytest.raises(ValueError, match=r"sampler='stats' needs a linear model.*softmax_merged"):
        train(SoftmaxMergedKQ(3, 2), TASK, method="sgd", lr=0.1, steps=2, sampler="stats")


def test_record_every_and_snapshot_every_record_at_fixed_step_intervals():
    """The loss at every step and the parameters every 5th (plus the last): the records are those of
    the plain torch loop at exactly those steps; the fused He step (log-spaced only) is not used."""
    lr, steps = 0.05, 23
    a = SeparateKQ(3, 3, init_scale=0.5, init_seed=2)
    b = SeparateKQ(3, 3, init_scale=0.5, init_seed=2)
    traj = train(a, TASK, method="sgd", lr=lr, steps=steps, batch_size=32, record_every=1,
                 snapshot_every=5)
    np.testing.assert_array_equal(traj.step, np.arange(steps + 1))
    np.testing.assert_allclose(traj.loss, _manual_sgd(b, TASK, lr, steps, 32), rtol=1e-12)
    np.testing.assert_allclose(traj.snapshot_time / (2 * lr), [0, 5, 10, 15, 20, 23])
    assert traj.backend["engine"] == "torch"


def test_gd_records_every_kth_step():
    traj = train(SeparateKQ(3, 3, init_scale=0.5, init_seed=2), TASK, method="gd", lr=0.05,
                 steps=12, record_every=4, snapshot_every=6)
    np.testing.assert_array_equal(traj.step, [0, 4, 8, 12])
    np.testing.assert_allclose(traj.snapshot_time / 0.1, [0, 6, 12])


def test_sampled_training_of_a_model_whose_objective_refuses_its_state():
    """The full disentangled model on orthonormal, sum-reduced data has an exact objective on Theorem
    1's subspace only: SGD leaves it, and the recorded population loss is NaN there instead of the
    run failing; from zero (on the subspace) it is the exact loss, 1."""
    from fastattn.models import DisentangledTransformer
    from fastattn.tasks import InductionPairs

    task = InductionPairs(8, 4, data="orthonormal", query="last", reduction="sum")
    traj = train(DisentangledTransformer(dim=8), task, method="sgd", lr=0.8, steps=4, batch_size=8,
                 record_every=1)
    population = traj.test_loss["population"]
    assert population[0] == pytest.approx(1.0) and np.isnan(population[-1])
    assert traj.status == "steps"


def test_snapshot_params_false_keeps_the_series_and_the_final_state():
    """A run that keeps only the model's snapshot series (the disentangled model's 19 pseudo-
    parameters, projected) records the same series at the same steps as one that keeps every
    snapshot's weights, and the same final weights."""
    from fastattn.analysis.pseudo_params import project
    from fastattn.models import DisentangledTransformer
    from fastattn.tasks import InductionPairs

    task = InductionPairs(6, 3, data="gaussian", query="uniform", reduction="mean")
    cfg = TrainConfig(method="sgd", lr=1.0, steps=12, batch_size=16, snapshot_every=3)
    full = train(DisentangledTransformer(dim=6, mask="inclusive"), task, cfg)
    model = DisentangledTransformer(dim=6, mask="inclusive")
    light = train(model, task, cfg, snapshot_params=False)
    assert full.params.shape[0] == 5 and light.params.shape[0] == 1
    np.testing.assert_array_equal(light.snapshot_time, full.snapshot_time)
    np.testing.assert_array_equal(light.final_params, full.final_params)
    assert light.series.keys() == full.series.keys() and len(light.series["alpha3"]) == 5
    for name in light.series:
        np.testing.assert_array_equal(light.series[name], full.series[name])
    np.testing.assert_allclose([light.series[n][-1] for n in model.names], project(*model.weights()),
                               rtol=1e-14, atol=1e-15)
    with pytest.raises(ValueError, match="snapshot_series"):
        train(SeparateKQ(3, 3), TASK, method="sgd", lr=0.1, steps=2, snapshot_params=False)
