"""Task-centric SGD (Mainali & Teixeira 2025 §2.3, A.8.4; spec §4.2): training runs in epochs over
the P fixed tasks, in a shuffled order each epoch; each task gets one update from the batch mean of
the query-loss gradients over `batch_size` fresh contexts. With fresh tasks (`tasks=None`) every
update draws a new task.

Time (docs/conventions.md, "Task-centric SGD"): an update of learning rate η advances the
gradient-flow time τ by 2η, as for every sampled method, so one epoch is τ = 2ηP and the paper's
epoch time is t = τ/(2ηP); its ODE dθ/dt = −ηP ∇L is the population flow dθ/dτ = −½ ∇L.

The model must provide `query_loss_grad(x, y, x_q, y_q) -> (loss, {name: grad})` (the matrix-free
backward of spec §10 K2) and the task `sample_task(mu, batch_size, step)`: the engine registry
(fastattn.training.engines) checks both before this engine runs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch

from fastattn.population.stops import Stop
from fastattn.training import flow
from fastattn.training.trajectory import Trajectory

if TYPE_CHECKING:
    from fastattn.models.base import ICLModel
    from fastattn.tasks.base import Task
    from fastattn.training.config import TrainConfig

_STREAM_ORDER = 5


def epoch_size(task: Task) -> int:
    """Updates per epoch: P for a fixed task set; 1 with fresh tasks (an epoch is then one task)."""
    return int(task.tasks) if getattr(task, "tasks", None) is not None else 1


def task_order(task: Task, epoch: int) -> np.ndarray:
    """The shuffled task order of `epoch` `[P]`: a pure function of (data_seed, epoch)."""
    g = np.random.default_rng(np.random.SeedSequence([int(task.data_seed), int(epoch), _STREAM_ORDER]))
    return g.permutation(epoch_size(task))


def train_task_sgd(model: ICLModel, task: Task, cfg: TrainConfig) -> Trajectory:
    """Run `cfg.steps` per-task updates of learning rate `cfg.lr` (batch mean over
    `cfg.batch_size` contexts); returns the trajectory with one record per logged epoch.

    Records, at about `cfg.n_records` log-spaced update counts (always 0 and the last): `loss` is
    the mean of the per-task batch losses since the previous record (over whole epochs it is the
    epoch loss (1/P) Σ_μ L_μ of A93); `test_loss["population"]` the exact population loss of the
    iterate (when the pair has one); a parameter snapshot at every record, so ‖p1‖, ‖q2‖ and
    Uᵀp2q1U can always be read off (spec §6.7).
    """
    # tiny tensors: one intra-op thread (several spin-wait, far slower on a busy machine)
    previous = torch.get_num_threads()
    torch.set_num_threads(cfg.threads or 1)
    try:
        return _run(model, task, cfg)
    finally:
        torch.set_num_threads(previous)


def _run(model: ICLModel, task: Task, cfg: TrainConfig) -> Trajectory:
    dtype = model.config.torch_dtype
    per_epoch = epoch_size(task)
    n_epochs = max(1, math.ceil(cfg.steps / per_epoch))
    record = set(flow.record_steps(cfg.steps, cfg.n_records).tolist())
    exact = flow.population_loss(task, model)
    params = {n: getattr(model, n) for n in model.PARAM_ORDER if getattr(model, n).requires_grad}
    out: dict[str, list] = {"step": [], "loss": [], "population": [], "params": []}

    def log(step: int, loss: float) -> None:
        out["step"].append(step)
        out["loss"].append(loss)
        out["params"].append(model.to_flat())
        if exact is not None:
            out["population"].append(exact(out["params"][-1]))

    status, k, total, count = Stop.STEPS, 0, 0.0, 0
    first = task.sample_task(0, cfg.batch_size, 0, dtype=dtype)
    log(0, model.query_loss_grad(first.x, first.y, first.x_q, first.y_q)[0])
    try:
        for epoch in range(n_epochs):
            for mu in task_order(task, epoch):
                if k == cfg.steps:
                    break
                b = task.sample_task(int(mu), cfg.batch_size, k, dtype=dtype)
                loss, grads = model.query_loss_grad(b.x, b.y, b.x_q, b.y_q)
                if not math.isfinite(loss):
                    status = Stop.DIVERGED
                    break
                with torch.no_grad():
                    for name, p in params.items():
                        p.sub_(cfg.lr * grads[name])
                total, count, k = total + loss, count + 1, k + 1
                if k in record:
                    log(k, total / count)
                    if cfg.target_loss is not None and total / count <= cfg.target_loss:
                        status = Stop.TARGET_LOSS
                        break
                    total, count = 0.0, 0
            if status != Stop.STEPS:
                break
    except KeyboardInterrupt:
        status = Stop.INTERRUPTED
    steps = np.asarray(out["step"], dtype=int)
    time = 2 * cfg.lr * steps
    tests = {"population": np.asarray(out["population"])} if exact is not None else {}
    return Trajectory(time=time, step=steps, loss=np.asarray(out["loss"]), test_loss=tests,
                      snapshot_time=time.astype(float), params=np.stack(out["params"]),
                      status=status, n_evals=k)
