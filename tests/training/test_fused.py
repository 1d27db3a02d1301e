"""`train()` reaches the fused He step on its own: bit-identical to `train_batched` with R = 1,
batched by `train_many` and `fastattn train --seeds`, the record's backend saying which engine ran
and why another did not."""

import dataclasses
import json

import numpy as np
import pytest
import torch

import fastattn._core_loader as loader
from fastattn._core_loader import core
from fastattn.cli import DIVERGED, main
from fastattn.models import MultiHeadSoftmax, SeparateKQ
from fastattn.tasks import LinearRegression
from fastattn.training import Checkpointing, Trajectory, rebuild_run, train, train_many
from fastattn.training.batched import BatchedAdamConfig, train_batched
from fastattn.training.fused import ENGINE, ENGINE_GPU

D, L, H = 3, 9, 2


def _task(seed, **kw):
    return LinearRegression(D, context=L, spectrum=[1.0] * D, noise=0.1, w_cov=np.eye(D) / D,
                            data_seed=seed, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_train_is_bit_identical_to_train_batched_alone(dtype):
    steps = 150
    model, reference = (MultiHeadSoftmax(D, H, init_seed=5, dtype=dtype) for _ in range(2))
    traj = train(model, _task(7), method="adam", lr=1e-2, steps=steps, batch_size=16,
                 progress=False)
    res = train_batched([reference], [_task(7)], BatchedAdamConfig(
        lr=1e-2, steps=steps, batch_size=16, record_every=1, stream="fast", backend="fused",
        threads=1))
    assert traj.backend == {"engine": ENGINE, "sampler": "fast", "runs_in_batch": 1, "threads": 1}
    assert traj.config["train"]["sampler"] == "fast"
    assert np.array_equal(model.to_flat(), reference.to_flat())
    assert np.array_equal(traj.final_params, reference.to_flat())
    inside = traj.step < steps
    assert np.array_equal(traj.loss[inside], res.losses[0][traj.step[inside]])
    assert traj.step[-1] == steps and traj.status == "steps"


def test_runs_that_do_not_fit_fall_back_and_say_why():
    traj = train(MultiHeadSoftmax(D, H), _task(0), method="adam", lr=1e-2, steps=3,
                 batch_size=8, weight_decay=0.1, progress=False)
    assert traj.backend["engine"] == "torch" and "weight_decay" in traj.backend["fallback"]
    traj = train(SeparateKQ(D, 2, 1, init_seed=0), _task(0), method="gd", lr=0.1, steps=3)
    assert traj.backend["engine"].startswith("exact population objective")
    with pytest.raises(ValueError, match=r"sampler='fast'.*method='sgd'"):
        train(MultiHeadSoftmax(D, H), _task(0), method="sgd", lr=1e-2, steps=3, sampler="fast")


def test_train_many_batches_and_equals_each_run_alone():
    lrs = [1e-2, 3e-3, 1e-2]
    models = [MultiHeadSoftmax(D, H, init_seed=s) for s in range(3)]
    many = train_many(models, [_task(10 + s) for s in range(3)],
                      [_cfg(lr) for lr in lrs])
    for s, (traj, lr) in enumerate(zip(many, lrs, strict=True)):
        alone = MultiHeadSoftmax(D, H, init_seed=s)
        ref = train(alone, _task(10 + s), _cfg(lr))
        assert traj.backend["runs_in_batch"] == 3
        assert np.array_equal(traj.loss, ref.loss) and np.array_equal(traj.params, ref.params)
        assert np.array_equal(models[s].to_flat(), alone.to_flat())


def _cfg(lr):
    from fastattn.training import TrainConfig

    return TrainConfig(method="adam", lr=lr, steps=60, batch_size=8, n_records=20, progress=False)


def test_fused_checkpoint_resumes_bit_for_bit(tmp_path):
    full = train(MultiHeadSoftmax(D, H, init_seed=1), _task(3), _cfg(1e-2))
    ckpt = Checkpointing(tmp_path / "run.ckpt", every=0)
    calls = {"n": 0}

    class Interrupting:
        """The core, with Ctrl-C arriving during the sixth call of the fused step."""

        def __getattr__(self, name):
            return getattr(core, name)

        def he_adam_steps(self, *a, **k):
            calls["n"] += 1
            out = core.he_adam_steps(*a, **k)        # the buffers move, then the interrupt
            if calls["n"] == 6:
                raise KeyboardInterrupt
            return out

    loader.core = Interrupting()
    try:
        cut = train(MultiHeadSoftmax(D, H, init_seed=1), _task(3), _cfg(1e-2), checkpoint=ckpt)
    finally:
        loader.core = core
    assert cut.status == "interrupted" and (tmp_path / "run.ckpt").exists()
    resumed = train(MultiHeadSoftmax(D, H, init_seed=1), _task(3), _cfg(1e-2),
                    checkpoint=Checkpointing(tmp_path / "run.ckpt", resume=True))
    assert np.array_equal(resumed.loss, full.loss) and np.array_equal(resumed.params, full.params)
    assert not (tmp_path / "run.ckpt").exists()


def test_a_diverged_fused_run_stops_at_its_last_good_state():
    traj = train(MultiHeadSoftmax(D, H, init_seed=0), _task(0), method="adam", lr=50.0,
                 steps=400, batch_size=8, progress=False)
    assert traj.status == "diverged" and traj.diverged_at is not None
    assert np.all(np.isfinite(traj.loss)) and traj.step[-1] < traj.diverged_at
    assert np.isfinite(traj.final_params).all()


def test_cli_seeds_train_batched_one_record_per_run(tmp_path):
    args = ["train", "--task", "linear_regression", "--model", "multihead_softmax", "--dim", "3",
            "--context", "7", "--heads", "2", "--noise", "0.1", "--spectrum", "identity",
            "--method", "adam", "--lr", "1e-2", "--batch-size", "8", "--steps", "20",
            "--seeds", "0..2", "--out", str(tmp_path), "--quiet"]
    assert main(args) == 0
    for s in range(3):
        record = json.loads((tmp_path / f"run-seed{s}.json").read_text())
        assert record["backend"]["runs_in_batch"] == 3
        assert record["config"]["model"]["init_seed"] == s == record["config"]["task"]["data_seed"]
    task, alone, cfg = rebuild_run(record["config"])            # the last run, seed 2, alone
    ref = train(alone, task, cfg)
    assert np.array_equal(Trajectory.load(tmp_path / "run-seed2.json").params, ref.params)


def test_cli_diverged_run_exits_with_its_code(tmp_path, capsys):
    args = ["train", "--task", "linear_regression", "--model", "separate", "--dim", "3",
            "--heads", "2", "--rank", "1", "--context", "5", "--init-scale", "0.5", "--method", "gd",
            "--lr", "1e3", "--steps", "50", "--out", str(tmp_path), "--quiet"]
    assert main(args) == DIVERGED
    assert "diverged at" in capsys.readouterr().err
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "diverged"


def test_sampled_record_names_batch_and_population_final_losses(tmp_path):
    traj = train(SeparateKQ(D, 2, 1, init_seed=0), _task(0), method="sgd", lr=0.05, steps=5,
                 batch_size=8, progress=False)
    meta = json.loads(traj.save(tmp_path / "r").read_text())
    assert meta["final_batch_loss"] == traj.final_loss
    assert meta["final_population_loss"] == traj.test_loss["population"][-1]
    assert meta["final_batch_loss"] != meta["final_population_loss"]


def test_default_threads_share_the_machine_among_workers(monkeypatch):
    from fastattn.training import threads

    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setenv("FASTATTN_WORKERS", "2")
    assert threads.machine_share() == 2
    assert threads.default_threads(10) == 1 and threads.default_threads(2**21) == 2
    monkeypatch.setenv("FASTATTN_WORKERS", "8")
    assert threads.machine_share() == 1
    monkeypatch.setenv("FASTATTN_WORKERS", "x")
    with pytest.raises(ValueError, match="FASTATTN_WORKERS"):
        threads.machine_share()


def test_exact_flows_run_on_one_thread_unless_asked():
    import torch

    before = torch.get_num_threads()
    traj = train(SeparateKQ(D, 2, 1, init_seed=0), _task(0), method="gd", lr=0.1, steps=3)
    assert traj.backend["threads"] == 1 and torch.get_num_threads() == before
    traj = train(SeparateKQ(D, 2, 1, init_seed=0), _task(0), method="gd", lr=0.1, steps=3,
                 threads=2)
    assert traj.backend["threads"] == 2


def test_flow_progress_line_shows_time_loss_and_evaluations(capsys):
    from fastattn import population
    from fastattn.population.wishart_tasks import FullModelObjective
    from fastattn.tasks.wishart_tasks import WishartTasks
    from fastattn.training.flow import FlowProgress

    line = FlowProgress("flow x", 10.0)
    line(2.5, 0.125, 40)
    line.close()
    assert capsys.readouterr().err == "\rflow x: t = 2.5 / 10, loss = 0.125, 40 evaluations \n"
    # the core calls it during a run (a slow torch objective: at least one 0.5 s interval)
    task = WishartTasks(2, tasks=3, context=4)
    seen = []
    population.integrate(FullModelObjective(task.s, task.context, task.U, task.task_eigs),
                         np.full(16, 0.1), method="rk45", t_end=1e4, max_seconds=1.5,
                         progress=lambda t, loss, n: seen.append((t, loss, n)))
    assert seen and all(0 < t <= 1e4 and np.isfinite(loss) and n > 0 for t, loss, n in seen)
    train(SeparateKQ(D, 2, 1, init_seed=0), _task(0), method="flow", t_end=10.0, progress=False)
    assert capsys.readouterr().err == ""        # quiet when asked (or piped)


def test_train_many_trains_other_runs_alone_and_says_why():
    from fastattn.training import TrainConfig

    sgd = TrainConfig(method="sgd", lr=1e-2, steps=5, batch_size=8, progress=False)
    trajs = train_many([MultiHeadSoftmax(D, H), MultiHeadSoftmax(D, H, init_seed=1)],
                       [_task(0), _task(1)], [sgd, _cfg(1e-2)])
    assert trajs[0].backend["engine"] == "torch" and "method='sgd'" in trajs[0].backend["fallback"]
    assert trajs[1].backend["runs_in_batch"] == 1


def test_cli_lrs_write_one_record_per_learning_rate(tmp_path):
    args = ["train", "--task", "linear_regression", "--model", "multihead_softmax", "--dim", "3",
            "--context", "7", "--heads", "2", "--method", "adam",
            "--batch-size", "8", "--steps", "10", "--lrs", "1e-3,1e-2", "--seeds", "4",
            "--out", str(tmp_path), "--quiet"]
    assert main(args) == 0
    for lr in ("0.001", "0.01"):
        record = json.loads((tmp_path / f"run-seed4-lr{lr}.json").read_text())
        assert record["config"]["train"]["lr"] == float(lr)
        assert record["backend"]["runs_in_batch"] == 2


def test_fused_runs_evaluate_test_sets_at_every_record():
    traj = train(MultiHeadSoftmax(D, H, init_seed=2), _task(3), method="adam", lr=1e-2, steps=50,
                 batch_size=8, n_records=12, test_size=32, eval_seed=9, progress=False)
    assert traj.backend["engine"] == ENGINE and set(traj.test_loss) == {"in_context"}
    for values in traj.test_loss.values():
        assert len(values) == len(traj.loss) and np.all(np.isfinite(values))
    ref = MultiHeadSoftmax(D, H, init_seed=2)
    plain = train(ref, _task(3), method="adam", lr=1e-2, steps=50, batch_size=8, n_records=12,
                  progress=False)
    assert np.array_equal(plain.loss, traj.loss) and np.array_equal(plain.params, traj.params)


def test_a_rotated_identity_covariance_takes_the_identity_factor():
    from fastattn.training.batched import FastLaw

    rotated = LinearRegression(D, context=L, spectrum=[1.0] * D, rotate=True, data_seed=0)
    assert not np.array_equal(rotated.cov_matrix, np.eye(D))          # I up to rounding
    assert np.array_equal(FastLaw.of(rotated).x_factor, np.eye(D))
    scaled = LinearRegression(D, context=L, spectrum=[2.0] * D, rotate=True, data_seed=0)
    f = FastLaw.of(scaled).x_factor                                   # √c I
    assert np.array_equal(f, f[0, 0] * np.eye(D))
    np.testing.assert_allclose(f @ f.T, scaled.cov_matrix, atol=1e-12)
    skewed = LinearRegression(D, context=L, spectrum=[2.0, 1.0, 0.5], rotate=True, data_seed=0)
    f = FastLaw.of(skewed).x_factor
    np.testing.assert_allclose(f @ f.T, skewed.cov_matrix, atol=1e-12)


class _CoreLog:
    """The compiled core, logging each call of the fused step to `log` and raising Ctrl-C
    during call number `ctrl_c_at` (after the buffers moved, as a real signal could)."""

    def __init__(self, log: list, ctrl_c_at: int | None = None):
        self.log, self.ctrl_c_at = log, ctrl_c_at

    def __getattr__(self, name):
        return getattr(core, name)

    def he_adam_steps(self, *a, **k):
        self.log.append("step")
        out = core.he_adam_steps(*a, **k)
        if self.log.count("step") == self.ctrl_c_at:
            raise KeyboardInterrupt
        return out


def _two_batches():
    """Runs 0 and 1 share a batch (H = 1); run 2 (H = 2) is a second one."""
    models = [MultiHeadSoftmax(D, 1, init_seed=0), MultiHeadSoftmax(D, 1, init_seed=1),
              MultiHeadSoftmax(D, 2, init_seed=2)]
    return models, [_task(s) for s in range(3)], _cfg(1e-2)


@pytest.mark.parametrize("cut_batch", [0, 1])
def test_train_many_hands_over_each_batch_as_it_ends_and_stops_at_ctrl_c(cut_batch, monkeypatch):
    """Each run reaches `on_done` as soon as its batch ends, before the next batch starts. Ctrl-C
    in the first batch: the second never starts, and `RunsInterrupted` holds the first batch's runs
    (status interrupted); in the last batch, `train_many` returns as `train` would."""
    from fastattn.training import RunsInterrupted

    log: list = []
    monkeypatch.setattr(loader, "core", _CoreLog(log))
    train_many(*_two_batches(), on_done=lambda k, t: log.append(k))
    assert log.index(0) < log.index(1) < log.index(2)
    first = log.index(0)
    assert set(log[:first]) == {"step"} and log[first:first + 2] == [0, 1]
    assert log[first + 2] == "step"                 # the second batch starts after the handover
    steps_in_first = first

    log.clear()
    at = 2 if cut_batch == 0 else steps_in_first + 2
    monkeypatch.setattr(loader, "core", _CoreLog(log, ctrl_c_at=at))
    models, tasks, cfg = _two_batches()
    untouched = models[2].to_flat().copy()
    if cut_batch == 0:
        with pytest.raises(RunsInterrupted) as stop:
            train_many(models, tasks, cfg, on_done=lambda k, t: log.append(k))
        trajs = stop.value.trajectories
        assert [t.status for t in trajs[:2]] == ["interrupted"] * 2 and trajs[2] is None
        assert log[-2:] == [0, 1] and set(log[:-2]) == {"step"}    # nothing after the handover
        assert np.array_equal(models[2].to_flat(), untouched)
    else:
        trajs = train_many(models, tasks, cfg, on_done=lambda k, t: log.append(k))
        assert [t.status for t in trajs] == ["steps", "steps", "interrupted"]
        assert log[-1] == 2 and trajs[2].step[-1] < cfg.steps == trajs[0].step[-1]


def test_cli_seeds_ctrl_c_keeps_what_ended_and_starts_nothing_more(tmp_path, monkeypatch, capsys):
    """`fastattn train --seeds 0-2` of sgd runs (trained one by one): Ctrl-C during seed 1 keeps
    seed 0's finished record and seed 1's interrupted one, and seed 2 never starts."""
    real, interrupted = LinearRegression.sample, []

    def sample(self, n, step, **kw):
        if self.data_seed == 1 and step == 4 and not interrupted:
            interrupted.append(step)
            raise KeyboardInterrupt
        return real(self, n, step, **kw)

    monkeypatch.setattr(LinearRegression, "sample", sample)
    args = ["train", "--task", "linear_regression", "--model", "multihead_softmax", "--dim", "3",
            "--context", "7", "--heads", "2", "--method", "sgd", "--lr", "1e-2",
            "--batch-size", "8", "--steps", "10", "--seeds", "0..2", "--out", str(tmp_path),
            "--quiet"]
    assert main(args) == 130
    statuses = {s: json.loads((tmp_path / f"run-seed{s}.json").read_text())["status"]
                for s in (0, 1)}
    assert statuses == {0: "steps", 1: "interrupted"}
    assert not (tmp_path / "run-seed2.json").exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not started: run-seed2" in err, err


@pytest.mark.interpreter
def test_train_many_on_a_device_runs_the_triton_steps_and_says_so(monkeypatch):
    """device=...: the batched runs step with the Triton kernels (here on CPU under the
    interpreter; on a GPU through CUDA graphs), recorded as such, and agree with the C++ core's
    runs to rounding (both draw the fast stream's normals in float32, by other code)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    lrs = [1e-2, 3e-3]
    runs = {}
    for device in (None, "cpu"):
        models = [MultiHeadSoftmax(D, H, init_seed=s) for s in range(2)]
        cfgs = [dataclasses.replace(_cfg(lr), steps=30, n_records=4, n_snapshots=2) for lr in lrs]
        runs[device] = (train_many(models, [_task(10 + s) for s in range(2)], cfgs,
                                   device=device), models)
    pairs = zip(zip(*runs[None], strict=True), zip(*runs["cpu"], strict=True), strict=True)
    for (core_traj, core_model), (gpu_traj, gpu_model) in pairs:
        assert gpu_traj.backend["engine"] == ENGINE_GPU and gpu_traj.backend["device"] == "cpu"
        assert core_traj.backend["engine"] == ENGINE
        assert np.array_equal(gpu_traj.step, core_traj.step)
        np.testing.assert_allclose(gpu_traj.loss, core_traj.loss, rtol=1e-4)
        np.testing.assert_allclose(gpu_model.to_flat(), core_model.to_flat(), rtol=1e-4,
                                   atol=1e-6)
        assert not np.array_equal(gpu_model.to_flat(), core_model.to_flat())   # another engine


@pytest.mark.interpreter
def test_cli_device_checks_before_any_work_and_runs_the_triton_steps(tmp_path, monkeypatch,
                                                                     capsys):
    """--device: refused in one line where its kernels cannot run (no --out written); under the
    interpreter, --device cpu trains the runs with the Triton steps and their records say so."""
    args = ["train", "--task", "linear_regression", "--model", "multihead_softmax", "--dim", "3",
            "--context", "7", "--heads", "2", "--noise", "0.1", "--spectrum", "identity",
            "--method", "adam", "--lr", "1e-2", "--batch-size", "8", "--steps", "6",
            "--seeds", "0..1", "--quiet"]
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert main([*args, "--out", str(tmp_path / "a"), "--device", "cpu"]) == 2
    assert "TRITON_INTERPRET=1" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert main([*args, "--out", str(tmp_path / "a"), "--device", "gpu7"]) == 2
    assert "--device gpu7 is no torch device" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main([*args, "--out", str(tmp_path / "a"), "--device", "cuda"]) == 2
        assert "no CUDA device is visible" in capsys.readouterr().err
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert main([*args, "--out", str(tmp_path / "b"), "--device", "cpu"]) == 0
    for s in range(2):
        backend = json.loads((tmp_path / "b" / f"run-seed{s}.json").read_text())["backend"]
        assert backend["engine"] == ENGINE_GPU and backend["device"] == "cpu"
        assert backend["runs_in_batch"] == 2
