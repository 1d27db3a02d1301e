"""Sampled runs checkpoint periodically and continue from a checkpoint bit for bit (issue 14
item 8)."""

import numpy as np
import pytest
import torch

from fastattn.models import SeparateKQ
from fastattn.tasks import LinearRegression
from fastattn.training import Checkpointing, TrainConfig, run_config, train
from fastattn.training.checkpoint import Checkpointer

TASK = LinearRegression(3, context=7, spectrum=[0.5, 0.3, 0.2], rotate=True, data_seed=0)


def model():
    return SeparateKQ(3, 2, init_scale=0.3, init_seed=1)


@pytest.mark.parametrize(("method", "every"), [("sgd", {"every": 0}), ("adam", {"every": 0}),
                                               ("adam", {"every": 1e9, "every_steps": 10})])
def test_a_run_resumed_from_its_checkpoint_is_bit_identical(method, every, tmp_path, monkeypatch):
    """Checkpoints before every step, or (issue 41: an Adam run cut before 60 s left none) every
    10 steps however long they take: cut at step 37, the last is the state after step 30."""
    kw = {"method": method, "lr": 0.02, "steps": 60, "batch_size": 16, "n_records": 12,
          "n_snapshots": 5, "test_size": 8, "eval_seed": 5}
    full = train(model(), TASK, **kw)
    real, interrupted = LinearRegression.sample, []

    def sample(self, batch_size, step, **k):
        if step == 37 and not interrupted:
            interrupted.append(step)
            raise KeyboardInterrupt
        return real(self, batch_size, step, **k)

    monkeypatch.setattr(LinearRegression, "sample", sample)
    path = tmp_path / "run.ckpt"
    cut = train(model(), TASK, checkpoint=Checkpointing(path, **every), **kw)
    assert cut.status == "interrupted" and path.exists()
    saved = torch.load(path, weights_only=True)["state"]["step"]
    assert saved == (37 if every["every"] == 0 else 30)
    monkeypatch.undo()
    resumed = train(model(), TASK, checkpoint=Checkpointing(path, resume=True), **kw)
    for name in ("time", "step", "loss", "snapshot_time", "params"):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(full, name), err_msg=name)
    assert resumed.test_loss.keys() == full.test_loss.keys()
    for name, curve in full.test_loss.items():
        np.testing.assert_array_equal(resumed.test_loss[name], curve, err_msg=name)
    assert (resumed.status, resumed.n_evals) == (full.status, full.n_evals)
    assert not path.exists()                       # a finished run removes its checkpoint


def test_a_checkpoint_resumes_only_its_own_run(tmp_path):
    path = tmp_path / "run.ckpt"
    kw = {"method": "sgd", "lr": 0.02, "steps": 5, "batch_size": 8}
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train(model(), TASK, checkpoint=Checkpointing(path, resume=True), **kw)
    Checkpointer(Checkpointing(path), run_config(TASK, model(), TrainConfig(**kw))).save({})
    with pytest.raises(ValueError, match="checkpoint of another run"):
        train(model(), TASK, checkpoint=Checkpointing(path, resume=True), **dict(kw, lr=0.03))
    with pytest.raises(ValueError, match="checkpoints are for sampled runs"):
        train(model(), TASK, method="flow", t_end=1.0, checkpoint=Checkpointing(path))


class _Payload:
    """Unpickling this calls `open(marker, "w")`: it would create the marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("how", ["pickle", "torch.save"])
def test_a_hostile_checkpoint_is_refused_unread_in_one_line(how, tmp_path):
    """Issue 37 failure 1: `torch.load(weights_only=False)` ran a crafted checkpoint's payload."""
    import pickle

    import torch

    marker, path = tmp_path / "pwned", tmp_path / "run.ckpt"
    kw = {"method": "sgd", "lr": 0.02, "steps": 5, "batch_size": 8}
    doc = {"config": run_config(TASK, model(), TrainConfig(**kw)), "x": _Payload(marker)}
    with open(path, "wb") as fh:
        (pickle.dump if how == "pickle" else torch.save)(doc, fh)
    with pytest.raises(ValueError, match="not a checkpoint this version can read") as err:
        train(model(), TASK, checkpoint=Checkpointing(path, resume=True), **kw)
    assert not marker.exists()
    assert "\n" not in str(err.value) and "nothing in it was run" in str(err.value)


def test_a_checkpoint_keeps_numpy_and_torch_state_bit_for_bit(tmp_path, rng):
    state = {"theta": rng.standard_normal((2, 3)).astype(np.float32), "loss0": float("nan"),
             "x": np.float64(rng.standard_normal()), "runs": [{"p": [np.arange(3)], "t": (1, "a")}],
             "w": __import__("torch").tensor(rng.standard_normal(4)), "none": None}
    ck = Checkpointer(Checkpointing(tmp_path / "c.ckpt", resume=True), {"a": [1, 2.5]})
    ck.save(state)
    back = ck.load()
    assert back["theta"].dtype == np.float32 and back["theta"].tobytes() == state["theta"].tobytes()
    assert type(back["x"]) is np.float64 and back["x"] == state["x"]
    assert np.isnan(back["loss0"]) and back["none"] is None
    assert back["runs"][0]["t"] == (1, "a") and back["runs"][0]["p"][0].tolist() == [0, 1, 2]
    assert back["w"].equal(state["w"])
