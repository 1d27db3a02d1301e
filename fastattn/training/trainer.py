"""`train(model, task, method=...)`: exact gradient flow, population GD, and sampled SGD / Adam,
for any registered (task, model) pair.

- "flow": the exact population gradient flow τ dθ/dt = −½ ∂L/∂θ (τ = 1) of the pair's closed-form
  objective, integrated in the C++ core (fastattn.training.flow).
- "gd": population gradient descent with a fixed learning rate (explicit Euler of the flow with
  Δt = 2η), what the papers' figures call training, minus the sampling noise.
- "task_sgd": task-centric SGD (Mainali & Teixeira 2025): epochs over a fixed task set, one
  batch-mean update per task (fastattn.training.task_sgd).
- "sgd" / "adam": torch training of `task.loss(model, batch)` on fresh batches every step (online)
  or on one fixed data set (`dataset_size`, full batch, as the papers' code does)
  (fastattn.training.sampled), or by the fused He step (fastattn.training.fused).

Which engine trains a run is `fastattn.training.engines.dispatch`'s choice: each engine declares
what it can train.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from fastattn.configs.options import check_method_fields
from fastattn.models.base import ICLModel, config_to_dict
from fastattn.population.stops import Stop
from fastattn.tasks.base import Task
from fastattn.training import fused
from fastattn.training.callbacks import Callback, Emitter
from fastattn.training.checkpoint import Checkpointing
from fastattn.training.config import TrainConfig
from fastattn.training.engines import FUSED, SNAPSHOT_SERIES, RunContext, dispatch, threads_of
from fastattn.training.progress import interactive
from fastattn.training.records import environment, to_jsonable
from fastattn.training.threads import machine_share, torch_threads
from fastattn.training.trajectory import Trajectory


def train(model: ICLModel, task: Task, config: TrainConfig | None = None, *,
          checkpoint: Checkpointing | None = None, callbacks: Sequence[Callback] = (),
          **kwargs: Any) -> Trajectory:
    """Train `model` on `task` in place and return its `Trajectory`.

    Pass a `TrainConfig`, or its fields as keyword arguments:
    `train(model, task, method="gd", lr=0.02, steps=10_000)`. The trajectory's `config` holds
    {"task": {"kind", ...fields}, "model": {"kind", ...asdict(config)}, "train": ...}, from which
    `fastattn.training.rebuild_run` rebuilds the run. `checkpoint` (sgd/adam): write periodic
    checkpoints, or continue from one bit for bit (`Checkpointing`); the file is removed when the
    run ends other than by an interrupt. `callbacks`: objects with `on_record(record)` that get each
    loss record as it is known (live logging: `fastattn.training.callbacks`, e.g.
    `TensorBoardLogger(dir)`), and `close()` when the run ends.
    """
    if isinstance(task, torch.nn.Module) or not isinstance(model, torch.nn.Module):
        raise TypeError(f"train(model, task, ...) takes a model then a task; got "
                        f"{type(model).__name__} then {type(task).__name__}")
    cfg = config if config is not None else TrainConfig(**kwargs)
    if config is not None and kwargs:
        cfg = dataclasses.replace(config, **kwargs)
    check_method_fields(cfg.method, [k for k, v in kwargs.items() if v is not None],
                        python=True)
    if checkpoint is not None and cfg.method not in ("sgd", "adam"):
        raise ValueError(f"checkpoints are for sampled runs (sgd, adam); method={cfg.method!r} "
                         "is an exact population run")
    if model.config.dim != task.dim:
        raise ValueError(f"model dim={model.config.dim} does not match task dim={task.dim}")
    if cfg.loss is not None and cfg.loss not in task.losses:
        raise ValueError(f"loss={cfg.loss!r} is unknown for task {task.kind!r}; choose one of "
                         f"{task.losses}")
    if cfg.test_size and cfg.eval_seed == task.data_seed:
        raise ValueError(f"eval_seed ({cfg.eval_seed}) must differ from the task's data_seed: "
                         "test sets must be independent of the training data")
    _check_finite(model)
    emitter = Emitter(callbacks)
    cfg, backend, engine = dispatch(model, task, cfg)
    start = time.perf_counter()
    threads = threads_of(engine, task, cfg)
    context = RunContext(checkpoint, _checkpoint_identity(task, model, cfg), _show_progress(cfg),
                         emitter)
    with torch_threads(threads):
        try:
            traj = engine.run(model, task, cfg, context)
            # engines that deliver nothing live (the flow, GD, task_sgd) hand over every record
            # here; the others have sent theirs already, and `emit` skips what was sent
            emitter.emit(traj.time, traj.step, traj.loss, traj.test_loss, traj.metrics)
        finally:
            emitter.close()
    backend["threads"] = threads
    traj.wall_time = time.perf_counter() - start
    if SNAPSHOT_SERIES.of(model) and cfg.snapshot_params:
        traj.series = model.snapshot_series(traj.params)
    traj.config = run_config(task, model, cfg)
    traj.meta = environment()
    traj.backend = backend
    return traj


class RunsInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM under `terminate_as_interrupt`) stopped `train_many` before every run
    had started. `trajectories[k]` is run k's trajectory if it ended (status "interrupted" for the
    runs the signal cut short, their last state kept), None if it never started."""

    def __init__(self, trajectories: list[Trajectory | None]):
        self.trajectories = trajectories
        cut = [k for k, t in enumerate(trajectories)
               if t is not None and t.status == Stop.INTERRUPTED]
        never = [k for k, t in enumerate(trajectories) if t is None]
        super().__init__(f"interrupted during runs {cut}; runs {never} not started")


def train_many(models: Sequence[ICLModel], tasks: Sequence[Task],
               configs: Sequence[TrainConfig] | TrainConfig,
               on_done: Callable[[int, Trajectory], None] | None = None,
               device: torch.device | str | None = None) -> list[Trajectory]:
    """Train models[k] on tasks[k] with configs[k] (or one config for all), each as `train` would,
    and return their trajectories in order; the models are updated in place.

    Runs the fused He step can train together (same options but the learning rate, same heads,
    dim, dtype and context length) are trained in one batched call: each run's numbers are
    bit-identical to its `train` alone (the fused step's runs are independent), and its record's
    `backend["runs_in_batch"]` says how many shared the call. Other runs are trained one by one.

    `device` (e.g. "cuda"): the batched fused runs step on that GPU with the Triton kernels
    (`fastattn.ops.he_adam_steps`: many steps per launch through CUDA graphs) instead of the C++
    core; their numbers then differ from the core's in rounding (both draw the fast stream in
    float32), and their record's `backend` says so. None (default): the C++ core.

    `on_done(k, trajectory)` is called as soon as run k ends (with its batch), so a caller can
    write each record then rather than after the last run. A run cut short by Ctrl-C ends with
    status "interrupted", as in `train`, and no further run starts: if some never started, this
    raises `RunsInterrupted` (which holds the ended runs) instead of returning.
    """
    if isinstance(configs, TrainConfig):
        configs = [configs] * len(models)
    if not len(models) == len(tasks) == len(configs):
        raise ValueError(f"models, tasks and configs must be equally long; got {len(models)}, "
                         f"{len(tasks)} and {len(configs)}")
    step_device = None if device is None else torch.device(device)
    out: list[Trajectory | None] = [None] * len(models)
    groups: dict[str, list[int]] = {}
    resolved, alone = [], []
    for k, (model, task, cfg) in enumerate(zip(models, tasks, configs, strict=True)):
        resolved_cfg, _, engine = dispatch(model, task, cfg)
        resolved.append(resolved_cfg)
        if engine is not FUSED:
            alone.append(k)                           # its record says why it was not fused
            continue
        cfg = resolved_cfg
        c = model.config
        key = repr((to_jsonable(dataclasses.replace(cfg, lr=1.0)), c.heads, c.dim, c.dtype,
                    task.max_context))
        groups.setdefault(key, []).append(k)
    for members in groups.values():
        for k in members:
            if model_check := _fused_check(models[k], tasks[k], resolved[k]):
                raise ValueError(model_check)

    def ended(members: list[int], trajs: list[Trajectory]) -> None:
        for k, traj in zip(members, trajs, strict=True):
            out[k] = traj
            if on_done is not None:
                on_done(k, traj)
        if any(t.status == Stop.INTERRUPTED for t in trajs) and any(t is None for t in out):
            raise RunsInterrupted(out)

    for k in alone:
        ended([k], [train(models[k], tasks[k], configs[k])])
    for members in groups.values():
        cfg = resolved[members[0]]
        if cfg.threads is None:        # the fused step threads over runs: the machine share
            cfg = dataclasses.replace(cfg, threads=min(machine_share(), len(members)))
        start = time.perf_counter()
        trajs = fused.train_fused([models[k] for k in members], [tasks[k] for k in members], cfg,
                                  lrs=[resolved[k].lr for k in members],
                                  progress=_show_progress(cfg), device=step_device)
        wall = (time.perf_counter() - start) / len(members)
        meta = environment()
        for k, traj in zip(members, trajs, strict=True):
            traj.wall_time = wall
            traj.config = run_config(tasks[k], models[k], resolved[k])
            traj.meta = meta
            traj.backend = {"engine": fused.ENGINE, "sampler": "fast",
                            "runs_in_batch": len(members), "threads": cfg.threads}
            if step_device is not None:
                traj.backend.update(engine=fused.ENGINE_GPU, device=str(step_device))
        ended(members, trajs)
    return out


def _fused_check(model: ICLModel, task: Task, cfg: TrainConfig) -> str | None:
    """What `train` checks before training, for a run `train_many` batches."""
    if model.config.dim != task.dim:
        return f"model dim={model.config.dim} does not match task dim={task.dim}"
    if cfg.test_size and cfg.eval_seed == task.data_seed:
        return (f"eval_seed ({cfg.eval_seed}) must differ from the task's data_seed: test sets "
                "must be independent of the training data")
    _check_finite(model)
    return None


def _checkpoint_identity(task: Task, model: ICLModel, cfg: TrainConfig) -> dict[str, Any]:
    """The run's identity in a checkpoint: its config without the options that do not change what
    it computes."""
    return run_config(task, model, dataclasses.replace(cfg, progress=None, threads=None))


def run_config(task: Task, model: ICLModel, cfg: TrainConfig) -> dict[str, Any]:
    """The plain-data {"task", "model", "train"} of a run, as its record stores it."""
    return {"task": {"kind": task.kind, **to_jsonable(task)},
            "model": to_jsonable(config_to_dict(model.config)), "train": to_jsonable(cfg)}


def rebuild_run(config: Mapping[str, Any]) -> tuple[Task, ICLModel, TrainConfig]:
    """(task, model, TrainConfig) from a run record's `config` (the inverse of `run_config`); the
    model is freshly initialised from its seed."""
    from fastattn.models import build_model, config_from_dict
    from fastattn.tasks import build_task

    return (build_task(config["task"]), build_model(config_from_dict(config["model"])),
            TrainConfig(**config["train"]))


def _check_finite(model: ICLModel) -> None:
    for name, p in model.named_parameters():
        if not torch.all(torch.isfinite(p)):
            raise ValueError(f"model parameter {name!r} contains NaN or inf; re-initialise the model")


def _show_progress(cfg: TrainConfig) -> bool:
    return interactive() if cfg.progress is None else cfg.progress

