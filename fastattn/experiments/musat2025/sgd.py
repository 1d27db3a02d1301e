"""Online SGD of the disentangled transformer (full or restricted to pseudo-parameters), shared by the
sampled-training figures of Musat et al. 2025 (Figs. 3, 4, 5, 9–19 and the sweep; spec §11.5): the
run's `RunSpec` (`fastattn.train`'s "sgd" on fresh batches, the loss recorded at every step, the
weights every `every` steps, every step for the restricted models) and what the figures read off the
finished run: the pseudo-parameters at the snapshots, the first steps at which α₃, β₂, γ₃ and the
loss cross their levels, and the weights (W1, W2, W3) at a snapshot."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.recipe import Run, RunSpec, preset_run
from fastattn.models import build_model
from fastattn.models.disentangled import THREE_PARAM


def first_steps(steps, theta: np.ndarray, names, loss, levels=(0.1, 0.5),
                loss_levels=(0.5, 0.2)) -> dict[str, int | None]:
    """First recorded step at which each of α₃, β₂, γ₃ (columns of θ `[records, P]`, recorded at
    `steps`) reaches each of `levels`, and the per-step loss falls to each of `loss_levels`
    (None: never)."""
    out: dict[str, int | None] = {}
    for name in THREE_PARAM:
        col = theta[:, list(names).index(name)]
        for level in levels:
            hit = np.nonzero(col >= level)[0]
            out[f"{name}>={level}"] = int(steps[hit[0]]) if hit.size else None
    for level in loss_levels:
        hit = np.nonzero(np.asarray(loss) <= level)[0]
        out[f"loss<={level}"] = int(hit[0]) if hit.size else None
    return out


def sgd_spec(label: str, model: str = "disentangled", *, task: dict[str, Any] | None = None,
             train: dict[str, Any] | None = None, every: int = 5, keep_weights: bool = True,
             group: dict[str, Any] | None = None) -> RunSpec:
    """The run of the (induction, `model`) preset (the disentangled transformer: "disentangled",
    "gram19", "three_param"; zero init) with the task and trainer options `task` and `train`, by
    `fastattn.train` on fresh batches (batch k a function of (data_seed, k)): the loss at every
    step, the pseudo-parameters every `every` steps (every step for the restricted models) and at
    the last, with the weights there (`keep_weights`; else only the final weights). Gaussian data
    select Figs. 4/5's SGD preset; the orthonormal preset's trainer is a flow (give method "sgd")."""
    train = {"sampler": "tokens", "threads": 1, "record_every": 1,
             "snapshot_every": every if model == "disentangled" else 1,
             "snapshot_params": keep_weights} | (train or {})
    return preset_run(label, "induction", model, group=group, task=task or {}, train=train)


def snapshot_steps(run: Run) -> np.ndarray:
    """`[S]` the optimiser steps of the run's parameter snapshots."""
    return np.round(run.traj.snapshot_time / (2 * run.spec.train.lr)).astype(int)


def weights(run: Run, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W1, W2, W3) of snapshot `index` as numpy arrays."""
    model = build_model(run.spec.model).load_flat(run.traj.params[index])
    return tuple(w.detach().numpy().copy() for w in model.weights())


def curves(run: Run) -> dict[str, Any]:
    """{"steps": snapshot steps, "theta" `[S, P]` (the pseudo-parameters, the model's snapshot series:
    projected for the full model, the trained ones for the restricted), "names", "loss"
    `[steps + 1]`, "first_step", "seconds_per_step"} of a finished `sgd_spec` run."""
    names = run.model.names
    theta = np.stack([run.traj.series[name] for name in names], axis=1)
    steps = snapshot_steps(run).tolist()
    loss = np.asarray(run.traj.loss).tolist()
    return {"steps": steps, "theta": theta, "names": names, "loss": loss,
            "first_step": first_steps(steps, theta, names, loss),
            "seconds_per_step": run.traj.wall_time / max(run.spec.train.steps, 1)}
