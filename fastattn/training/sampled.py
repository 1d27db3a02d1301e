"""The torch engine: sampled SGD / Adam / AdamW on `task.loss`, on fresh batches every step (online)
or on one fixed data set, with checkpoints, live records and the held-out tests and metrics."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from fastattn.population.stops import Stop
from fastattn.training import flow
from fastattn.training.checkpoint import Checkpointer, Checkpointing
from fastattn.training.config import TrainConfig, diverged
from fastattn.training.trajectory import Trajectory

if TYPE_CHECKING:
    from fastattn.models.base import ICLModel
    from fastattn.tasks.base import Task
    from fastattn.training.callbacks import Emitter


def train_sampled(model: ICLModel, task: Task, cfg: TrainConfig,
                  checkpoint: Checkpointing | None = None, identity: dict[str, Any] | None = None,
                  progress: bool = False, emitter: Emitter | None = None) -> Trajectory:
    """Train `model` on `task` in place by `task.loss` and a torch optimiser (SGD, Adam or AdamW);
    batches from `task.sample` (or one fixed data set, `dataset_size`) or, with sampler "stats",
    from `task.sample_stats`. `checkpoint`: checkpoint and resume, for the run whose config is
    `identity`; `emitter`: gets each loss record as it is taken."""
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

    status, n_evals, diverged_step = Stop.STEPS, 0, None
    stop_after: int | None = None       # target_metric met: stop once this many records are taken
    done = 0                   # optimiser steps taken: the model holds the state after `done` steps
    evaluated: tuple[int, float] | None = None      # (step, training loss) at the current state
    loss0 = math.nan
    previous = [p.detach().clone() for p in model.parameters()]
    # the run's identity, without the options that do not change what it computes
    ckpt = Checkpointer(checkpoint, identity or {})
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
    progress = tqdm(total=cfg.steps, initial=done, disable=not progress, unit="step",
                    desc=f"{cfg.method} {model.kind}")
    try:
        for k in range(done, cfg.steps + 1):
            if ckpt.due(k):           # between steps: the state after k steps, records before k
                ckpt.save({"step": k, "model": model.state_dict(), "optimizer": opt.state_dict(),
                           "scheduler": sched.state_dict() if sched else None,
                           "previous": previous, "n_evals": n_evals, "loss0": loss0, "out": out,
                           "test_out": test_out, "stop_after": stop_after})
            loss = task.loss(model, draw(k), loss_name)
            n_evals += 1
            value = loss.item()
            loss0 = value if k == 0 else loss0
            if diverged(value, loss0):
                status, diverged_step = Stop.DIVERGED, k
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
                status = Stop.TARGET_LOSS
                break
            if k in rec and cfg.target_metric is not None:
                name, level = cfg.target_metric
                if name not in out["metrics"]:
                    raise ValueError(f"target_metric {name!r} is not a metric of task {task.kind!r}; "
                                     f"it has {sorted(out['metrics'])}")
                if stop_after is None and out["metrics"][name][-1] >= level:
                    stop_after = len(out["step"]) + cfg.patience
                if stop_after is not None and len(out["step"]) >= stop_after:
                    status = Stop.TARGET_METRIC
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
        status = Stop.INTERRUPTED
    finally:
        progress.close()
    if status != Stop.INTERRUPTED:
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
