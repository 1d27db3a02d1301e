"""`train(model, task, method=...)`: exact gradient flow, population GD, and sampled SGD / Adam,
for any registered (task, model) pair.

- "flow": the exact population gradient flow τ dθ/dt = −½ ∂L/∂θ (τ = 1) of the pair's closed-form
  objective, integrated in the C++ core (fastattn.training.flow).
- "gd": population gradient descent with a fixed learning rate (explicit Euler of the flow with
  Δt = 2η), what the papers' figures call training, minus the sampling noise.
- "task_sgd": task-centric SGD (Mainali & Teixeira 2025): epochs over a fixed task set, one
  batch-mean update per task (fastattn.training.task_sgd).
- "sgd" / "adam": torch training of `task.loss(model, batch)` on fresh batches every step (online)
  or on one fixed data set (`dataset_size`, full batch, as the papers' code does).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from fastattn import population
from fastattn.models.base import ICLModel, config_to_dict
from fastattn.tasks.base import Task
from fastattn.training import flow, fused, task_sgd
from fastattn.training.callbacks import Callback, Emitter
from fastattn.training.checkpoint import Checkpointer, Checkpointing
from fastattn.training.config import TrainConfig, diverged
from fastattn.training.progress import interactive
from fastattn.training.records import environment, to_jsonable
from fastattn.training.threads import default_threads, machine_share, torch_threads
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
    cfg = config if config is not None else TrainConfig(**kwargs)
    if config is not None and kwargs:
        cfg = dataclasses.replace(config, **kwargs)
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
    if not cfg.snapshot_params and not hasattr(model, "snapshot_series"):
        raise ValueError(f"snapshot_params=False keeps the model's snapshot_series, which "
                         f"{type(model).__name__} does not define; keep the parameters")
    _check_finite(model)
    emitter = Emitter(callbacks)
    cfg, backend = dispatch(model, task, cfg)
    start = time.perf_counter()
    threads = cfg.threads or 1      # exact objectives and the fused step: small ops
    if cfg.threads is None and cfg.method in ("sgd", "adam") and cfg.sampler != "fast":
        threads = default_threads((cfg.dataset_size or cfg.batch_size) * task.sequence_size)
    with torch_threads(threads):
        try:
            if cfg.method in ("flow", "gd"):
                traj = flow.population_runs(
                    [model], [task], cfg, progress=_show_progress(cfg),
                    listen=emitter.progress if emitter.wants_progress else None)[0][0]
            elif cfg.method == "task_sgd":
                traj = task_sgd.train_task_sgd(model, task, cfg)
            elif cfg.sampler == "fast":
                traj = fused.train_fused([model], [task], cfg, checkpoint=checkpoint,
                                         identity=_checkpoint_identity(task, model, cfg),
                                         progress=_show_progress(cfg), emitter=emitter)[0]
            else:
                traj = _train_sampled(model, task, cfg, checkpoint, emitter)
            # engines that deliver nothing live (the flow, GD, task_sgd) hand over every record
            # here; the others have sent theirs already, and `emit` skips what was sent
            emitter.emit(traj.time, traj.step, traj.loss, traj.test_loss, traj.metrics)
        finally:
            emitter.close()
    backend["threads"] = threads
    traj.wall_time = time.perf_counter() - start
    if hasattr(model, "snapshot_series") and cfg.snapshot_params:
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
        cut = [k for k, t in enumerate(trajectories) if t is not None and t.status == "interrupted"]
        never = [k for k, t in enumerate(trajectories) if t is None]
        super().__init__(f"interrupted during runs {cut}; runs {never} not started")


def train_many(models: Sequence[ICLModel], tasks: Sequence[Task],
               configs: Sequence[TrainConfig] | TrainConfig,
               on_done: Callable[[int, Trajectory], None] | None = None) -> list[Trajectory]:
    """Train models[k] on tasks[k] with configs[k] (or one config for all), each as `train` would,
    and return their trajectories in order; the models are updated in place.

    Runs the fused He step can train together (same options but the learning rate, same heads,
    dim, dtype and context length) are trained in one batched call: each run's numbers are
    bit-identical to its `train` alone (the fused step's runs are independent), and its record's
    `backend["runs_in_batch"]` says how many shared the call. Other runs are trained one by one.

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
    out: list[Trajectory | None] = [None] * len(models)
    groups: dict[str, list[int]] = {}
    resolved, alone = [], []
    for k, (model, task, cfg) in enumerate(zip(models, tasks, configs, strict=True)):
        resolved_cfg, backend = dispatch(model, task, cfg)
        resolved.append(resolved_cfg)
        if backend["engine"] != fused.ENGINE:
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
        if any(t.status == "interrupted" for t in trajs) and any(t is None for t in out):
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
                                  progress=_show_progress(cfg))
        wall = (time.perf_counter() - start) / len(members)
        meta = environment()
        for k, traj in zip(members, trajs, strict=True):
            traj.wall_time = wall
            traj.config = run_config(tasks[k], models[k], resolved[k])
            traj.meta = meta
            traj.backend = {"engine": fused.ENGINE, "sampler": "fast",
                            "runs_in_batch": len(members), "threads": cfg.threads}
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


def dispatch(model: ICLModel, task: Task, cfg: TrainConfig) -> tuple[TrainConfig, dict[str, Any]]:
    """The engine that trains this run fastest with the numbers its config defines: the config
    with `sampler` resolved, and the record's `backend` (engine, sampler, and the fallback reasons
    when the run does not fit a faster engine)."""
    if cfg.method in ("flow", "gd"):
        objective = flow.objectives([model], [task], cfg.method)[0]
        backend = {"engine": f"exact population objective ({type(objective).__name__})"}
        full = population.objective_for(task, model)
        if type(full) is not type(objective):
            backend["reduction"] = (f"exact reduction of {type(full).__name__}: its flow from "
                                    "this state stays on the set where the cheaper objective is "
                                    "exact (reduction_at)")
        return cfg, backend
    if cfg.method == "task_sgd":
        return cfg, {"engine": "torch (task-centric SGD)"}
    reasons = fused.fast_stream_reasons(model, task, cfg) + _torch_only(cfg)
    if cfg.record_every or cfg.snapshot_every or not cfg.snapshot_params:
        reasons = [*reasons, "record_every / snapshot_every / snapshot_params (the fused step "
                             "snapshots the parameters, log-spaced)"]
    if cfg.sampler == "fast" and reasons:
        raise ValueError("sampler='fast' (the fused He step) cannot train this run: "
                         + "; ".join(reasons) + ". Use sampler='tokens'")
    if cfg.sampler in ("fast", "auto") and not reasons:
        return (dataclasses.replace(cfg, sampler="fast"),
                {"engine": fused.ENGINE, "sampler": "fast", "runs_in_batch": 1})
    backend = {"engine": "torch", "sampler": "tokens" if cfg.sampler == "auto" else cfg.sampler}
    if cfg.sampler == "auto":
        backend["fallback"] = "not the fused He step: " + "; ".join(reasons)
        cfg = dataclasses.replace(cfg, sampler="tokens")
    return cfg, backend


def _torch_only(cfg: TrainConfig) -> list[str]:
    """The options only the torch trainer has (reasons the fused step cannot take the run)."""
    defaults = TrainConfig(method="adam", lr=1.0, steps=1)
    return [f"{name} (the fused step is plain Adam, checked only by the torch trainer)"
            for name in ("betas", "warmup", "target_metric")
            if getattr(cfg, name) != getattr(defaults, name)]


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


# ---------------------------------------------------------------------------------- sampled
def _train_sampled(model: ICLModel, task: Task, cfg: TrainConfig,
                   checkpoint: Checkpointing | None = None,
                   emitter: Emitter | None = None) -> Trajectory:
    from tqdm.auto import tqdm

    dtype = model.config.torch_dtype
    loss_name = cfg.loss or task.losses[0]
    if cfg.method == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    elif cfg.weight_decay:
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                betas=cfg.betas)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=cfg.betas)
    warmup = cfg.warmup
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / warmup)) \
        if warmup else None
    data = None
    if cfg.dataset_size is not None:
        data = task.fixed_dataset(cfg.dataset_size, task.data_seed, dtype=dtype, whiten=cfg.whiten)
    tests = task.test_sets(cfg.test_size, cfg.eval_seed, dtype=dtype) if cfg.test_size else {}
    exact = flow.population_loss(task, model)
    if cfg.sampler == "stats" and not (hasattr(task, "sample_stats")
                                       and hasattr(model, "forward_stats")):
        raise ValueError(f"sampler='stats' needs a linear model (merged, separate, cubic_mlp) on a "
                         f"task with sample_stats; {model.kind} on {task.kind} reads the tokens "
                         "themselves: use sampler='tokens'")

    # a task with `metrics` (the token tasks) measures its test sets itself
    measure = getattr(task, "metrics", None) if tests else None
    if cfg.target_metric is not None and measure is None:
        raise ValueError(f"target_metric={cfg.target_metric!r} needs a task with held-out metrics "
                         f"(`metrics`, e.g. the token tasks); task {task.kind!r} has only test "
                         "losses: use target_loss")
    rec = set(flow.record_steps(cfg.steps, cfg.n_records, cfg.record_every).tolist())
    snap = set(flow.record_steps(cfg.steps, cfg.n_snapshots, cfg.snapshot_every).tolist())
    out: dict[str, list] = {"step": [], "loss": [], "snap_step": [], "params": [], "metrics": {}}

    def snapshot(k: int) -> None:
        out["snap_step"].append(k)
        flat = model.to_flat()
        out["params"].append(flat if cfg.snapshot_params else model.snapshot_series(flat[None]))
    test_out: dict[str, list] = ({} if measure else {k: [] for k in tests}) | \
        ({"population": []} if exact else {})

    def draw(k: int) -> Any:
        if cfg.sampler == "stats":
            return task.sample_stats(cfg.batch_size, k, dtype=dtype)
        return data if data is not None else task.sample(cfg.batch_size, k, dtype=dtype)

    def record(k: int, value: float) -> None:
        out["step"].append(k)
        out["loss"].append(value)
        with torch.no_grad():
            if measure is not None:
                for name, v in measure(model, tests).items():
                    out["metrics"].setdefault(name, []).append(v)
            else:
                for name, test in tests.items():
                    test_out[name].append(float(task.loss(model, test, loss_name)))
        if exact:
            test_out["population"].append(exact(model.to_flat()))
        if emitter:
            emitter.emit(2 * cfg.lr * np.asarray(out["step"]), out["step"], out["loss"], test_out,
                         out["metrics"])

    status, n_evals, diverged_step = "steps", 0, None
    stop_after: int | None = None       # target_metric met: stop once this many records are taken
    done = 0                   # optimiser steps taken: the model holds the state after `done` steps
    evaluated: tuple[int, float] | None = None      # (step, training loss) at the current state
    loss0 = math.nan
    previous = [p.detach().clone() for p in model.parameters()]
    # the run's identity, without the options that do not change what it computes
    ckpt = Checkpointer(checkpoint, _checkpoint_identity(task, model, cfg))
    state = ckpt.load()
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        done, n_evals, loss0, out, test_out, previous, stop_after = (
            state[k] for k in ("step", "n_evals", "loss0", "out", "test_out", "previous",
                               "stop_after"))
        if sched is not None:
            sched.load_state_dict(state["scheduler"])
        if emitter:     # the interrupted process delivered the records it had
            emitter.sent = len(out["step"])
    progress = tqdm(total=cfg.steps, initial=done, disable=not _show_progress(cfg), unit="step",
                    desc=f"{cfg.method} {model.kind}")
    try:
        for k in range(done, cfg.steps + 1):
            if ckpt.due():           # between steps: the state after k steps, records before k
                ckpt.save({"step": k, "model": model.state_dict(), "optimizer": opt.state_dict(),
                           "scheduler": sched.state_dict() if sched else None,
                           "previous": previous, "n_evals": n_evals, "loss0": loss0, "out": out,
                           "test_out": test_out, "stop_after": stop_after})
            loss = task.loss(model, draw(k), loss_name)
            n_evals += 1
            value = loss.item()
            loss0 = value if k == 0 else loss0
            if diverged(value, loss0):
                status, diverged_step = "diverged", k
                with torch.no_grad():
                    for p, q in zip(model.parameters(), previous, strict=True):
                        p.copy_(q)
                done = max(k - 1, 0)
                break
            evaluated = (k, value)
            if k in rec:
                record(k, value)
            if k in snap:
                snapshot(k)
            if cfg.target_loss is not None and value <= cfg.target_loss:
                status = "target_loss"
                break
            if k in rec and cfg.target_metric is not None:
                name, level = cfg.target_metric
                if name not in out["metrics"]:
                    raise ValueError(f"target_metric {name!r} is not a metric of task {task.kind!r}; "
                                     f"it has {sorted(out['metrics'])}")
                if stop_after is None and out["metrics"][name][-1] >= level:
                    stop_after = len(out["step"]) + cfg.patience
                if stop_after is not None and len(out["step"]) >= stop_after:
                    status = "target_metric"
                    break
            if k == cfg.steps:
                break
            previous = [p.detach().clone() for p in model.parameters()]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            done = k + 1
            progress.update(1)
            if k % 100 == 0:
                progress.set_postfix(loss=f"{value:.4g}")
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        progress.close()
    if status != "interrupted":
        ckpt.remove()
    # The record ends with the state the run stopped in, whatever stopped it.
    if not out["step"] or out["step"][-1] != done:
        if evaluated is None or evaluated[0] != done:
            with torch.no_grad():
                evaluated = (done, task.loss(model, draw(done), loss_name).item())
            n_evals += 1
        record(*evaluated)
    if not out["snap_step"] or out["snap_step"][-1] != done:
        snapshot(done)
    series = {}
    if not cfg.snapshot_params:
        series = {k: np.concatenate([s[k] for s in out["params"]]) for k in out["params"][0]}
        out["params"] = [model.to_flat()]
    steps = np.asarray(out["step"], dtype=int)
    return Trajectory(time=2 * cfg.lr * steps, step=steps, loss=np.asarray(out["loss"]),
                      test_loss={k: np.asarray(v) for k, v in test_out.items()},
                      snapshot_time=2 * cfg.lr * np.asarray(out["snap_step"], dtype=float),
                      params=np.stack(out["params"]), status=status, n_evals=n_evals,
                      series=series, diverged_at=diverged_step,
                      metrics={k: np.asarray(v) for k, v in out["metrics"].items()})


def _show_progress(cfg: TrainConfig) -> bool:
    return interactive() if cfg.progress is None else cfg.progress

