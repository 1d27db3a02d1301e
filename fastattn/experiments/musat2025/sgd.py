"""Online SGD of the disentangled transformer (full or restricted to pseudo-parameters), shared by the
sampled-training figures of Musat et al. 2025 (Figs. 3, 4, 5, 9–19; spec §11.5): the loss at every
step, the pseudo-parameters every `every` steps (every step for the restricted models), the first
steps at which α₃, β₂, γ₃ and the loss cross their levels, and copies of (W1, W2, W3) at given steps."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from fastattn.analysis.pseudo_params import project
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


def sgd_run(model, task, lr: float, steps: int, batch: int, *, every: int = 5,
            snapshots: tuple[int, ...] = ()) -> dict[str, Any]:
    """`steps` SGD steps of `model` (a `DisentangledTransformer`) on fresh batches of `task`
    (`InductionPairs`, batch k a function of (data_seed, k)). Returns {"steps": recorded steps,
    "theta" `[records, P]`, "names", "loss" `[steps + 1]`, "first_step", "seconds_per_step",
    "snapshots": {step: (W1, W2, W3) as numpy arrays}}."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    full = model.config.params == "full"
    every = every if full else 1
    recorded, theta, loss, shots = [], [], [], {}
    t0 = time.perf_counter()
    for step in range(steps + 1):
        b = task.sample(batch, step)
        value = task.loss(model, b)
        loss.append(value.item())
        if step % every == 0 or step == steps:
            recorded.append(step)
            theta.append(project(*model.weights()) if full else model.theta.detach().numpy().copy())
        if step in snapshots:
            shots[step] = tuple(w.detach().numpy().copy() for w in model.weights())
        if step < steps:
            opt.zero_grad()
            value.backward()
            opt.step()
    wall = time.perf_counter() - t0
    traj = np.array(theta)
    return {"steps": recorded, "theta": traj, "names": model.names, "loss": loss,
            "first_step": first_steps(recorded, traj, model.names, loss),
            "seconds_per_step": wall / max(steps, 1), "snapshots": shots}
