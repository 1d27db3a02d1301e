"""Live logging: every engine hands each record to the callbacks, once and in order, the values
equal to the trajectory's; TensorBoard's own event reader reads them back."""

import numpy as np
import pytest

from fastattn.models import MultiHeadSoftmax, SeparateKQ
from fastattn.tasks import LinearRegression
from fastattn.training import train
from fastattn.training.callbacks import Record, TensorBoardLogger, logger


class Collect:
    """Keeps each record, and the model's parameters when it arrived (the model is live only in
    the torch loop)."""

    def __init__(self, model=None):
        self.records: list[Record] = []
        self.params: list[np.ndarray] = []
        self.model, self.closed, self.progress = model, 0, []

    def on_record(self, record):
        self.records.append(record)
        if self.model is not None:
            self.params.append(self.model.to_flat())

    def on_progress(self, t, loss, n_evals):
        self.progress.append((t, loss, n_evals))

    def close(self):
        self.closed += 1


def _linear(**kw):
    return LinearRegression(3, context=7, spectrum=[0.5, 0.3, 0.2], **kw)


def _check(records, traj):
    assert [r.index for r in records] == list(range(len(traj.loss)))
    np.testing.assert_array_equal([r.loss for r in records], traj.loss)
    np.testing.assert_array_equal([r.time for r in records], traj.time)
    for name, values in traj.test_loss.items():
        np.testing.assert_array_equal([r.test_loss[name] for r in records], values)


def test_flow_hands_over_every_record():
    cb = Collect()
    traj = train(SeparateKQ(3, 2, 1, init_scale=0.1, init_seed=0), _linear(), method="flow",
                 t_end=50.0, n_records=30, callbacks=[cb])
    _check(cb.records, traj)
    assert all(r.step is None for r in cb.records) and cb.closed == 1


def test_torch_loop_records_arrive_while_the_model_is_at_that_step():
    model = SeparateKQ(3, 2, 1, init_scale=0.1, init_seed=0)
    cb = Collect(model)
    traj = train(model, _linear(), method="sgd", lr=0.05, steps=40, batch_size=64,
                 record_every=5, snapshot_every=5, sampler="tokens", test_size=32,
                 callbacks=[cb], progress=False)
    _check(cb.records, traj)
    assert [r.step for r in cb.records] == traj.step.tolist()
    # a record at step k is delivered before step k's update: the model then holds snapshot k
    snaps = dict(zip(traj.snapshot_time.tolist(), traj.params, strict=True))
    for rec, params in zip(cb.records, cb.params, strict=True):
        np.testing.assert_array_equal(params, snaps[rec.time])


def test_fused_he_step_hands_over_every_record():
    task = LinearRegression(3, context=9, spectrum=[1.0] * 3, noise=0.1, w_cov=np.eye(3) / 3,
                            data_seed=7)
    cb = Collect()
    traj = train(MultiHeadSoftmax(3, 2, init_seed=5), task, method="adam", lr=1e-2, steps=60,
                 batch_size=16, n_records=8, test_size=16, callbacks=[cb], progress=False)
    assert traj.backend["engine"].startswith("fused")
    _check(cb.records, traj)
    assert cb.records[-1].step == 60 and cb.closed == 1


def test_a_failing_run_still_closes_its_loggers():
    cb = Collect()
    with pytest.raises(ValueError, match="t_end"):
        train(SeparateKQ(3, 2, 1, init_seed=0), _linear(), method="flow", callbacks=[cb])
    with pytest.raises(TypeError, match="on_record"):
        train(SeparateKQ(3, 2, 1, init_seed=0), _linear(), method="flow", t_end=1.0,
              callbacks=[object()])


@pytest.mark.parametrize("method", ["flow", "sgd", "adam"])
def test_tensorboard_event_reader_reads_back_the_trajectory(tmp_path, method):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    if method == "adam":
        model = MultiHeadSoftmax(3, 2, init_seed=1)
        task = LinearRegression(3, context=9, spectrum=[1.0] * 3, w_cov=np.eye(3) / 3)
        kw = dict(lr=1e-2, steps=30, batch_size=16, n_records=6)
    else:
        model, task = SeparateKQ(3, 2, 1, init_scale=0.1, init_seed=0), _linear()
        kw = (dict(t_end=20.0, n_records=25) if method == "flow" else
              dict(lr=0.05, steps=30, batch_size=32, record_every=3, sampler="tokens"))
    traj = train(model, task, method=method, callbacks=[logger(f"tensorboard:{tmp_path}")],
                 progress=False, **kw)
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    loss = events.Scalars("loss")
    expected_steps = traj.step if method != "flow" else np.arange(len(traj.loss))
    assert [e.step for e in loss] == expected_steps.tolist()
    # event files store float32
    np.testing.assert_allclose([e.value for e in loss], traj.loss, rtol=1e-6, atol=0)
    np.testing.assert_allclose([e.value for e in events.Scalars("time")], traj.time, rtol=1e-6)
    if method == "adam":
        assert traj.backend["engine"].startswith("fused")


def test_log_spec_errors_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match="tensorboard:DIR"):
        logger("tensorboard")
    with pytest.raises(ValueError, match="wandb"):
        logger("mlflow:x")
    assert isinstance(logger(f"tensorboard:{tmp_path}"), TensorBoardLogger)


def test_the_cli_logs_a_run_to_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from fastattn.cli import main
    from fastattn.training import Trajectory

    tb = tmp_path / "tb"
    assert main(["train", "--task", "linear_regression", "--model", "separate", "--dim", "3",
                 "--t-end", "20", "--out", str(tmp_path / "run"), "--quiet",
                 "--log", f"tensorboard:{tb}"]) == 0
    traj = Trajectory.load(tmp_path / "run" / "run.json")
    events = EventAccumulator(str(tb))
    events.Reload()
    np.testing.assert_allclose([e.value for e in events.Scalars("loss")], traj.loss, rtol=1e-6)
    assert main(["train", "--task", "linear_regression", "--model", "separate", "--dim", "3",
                 "--t-end", "20", "--out", str(tmp_path / "bad"), "--log", "nope"]) == 2
