"""Figs. 4/5 (App. C/D, spec §11.5): sampled SGD of the full disentangled transformer and of its
3-parameter restriction on Gaussian data (two runs), the full model's distance from the 19-dimensional
subspace, and the time per step against the literal torch model (every layer on every row: five SGD
steps timed in `summarize`, a measurement of that model, not a run of the figure)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from fastattn.analysis.pseudo_params import subspace_report
from fastattn.experiments.musat2025.sgd import curves, sgd_spec
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.models.disentangled import NAMES, THREE_PARAM
from fastattn.models.reference import disentangled_transformer


def _time_reference(task, model, batch: int, repeats: int = 5) -> float:
    """Seconds per SGD step of the literal model (every layer on every row) at the same weights."""
    W = [w.detach().clone().requires_grad_(True) for w in (model.W1, model.W2, model.W3)]
    t0 = time.perf_counter()
    for step in range(repeats):
        b = task.sample(batch, step)
        err = ((disentangled_transformer(b.X, *W, model.config.mask) - b.y) ** 2).sum(-1)
        loss = (err / task.dim).mean()
        loss.backward()
        with torch.no_grad():
            for w in W:
                w -= w.grad
                w.grad = None
    return (time.perf_counter() - t0) / repeats


def runs(quick: bool) -> list[RunSpec]:
    """Figs. 4/5's presets (D = 16, N = 4, B = 512, 400 steps; quick: B = 256, 80 steps)."""
    task, train = {"data": "gaussian"}, ({"steps": 80, "batch_size": 256} if quick else {})
    return [sgd_spec("full", task=task, train=train, keep_weights=False),
            sgd_spec("three_param", "three_param", task=task, train=train)]


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    """The numbers, and under "curves" each run's recorded steps, pseudo-parameters [steps, P] and
    losses (what `plot` draws)."""
    by = {r.spec.label: r for r in runs}
    s = by["full"].spec
    B = s.train.batch_size
    sgd = {name: curves(run) for name, run in by.items()}
    full = by["full"].model
    report = subspace_report(full.W1.detach(), full.W2.detach(), full.W3.detach())
    torch.set_num_threads(1)
    task = by["full"].spec.task
    return {"settings": {"D": task.dim, "N": task.context, "batch": B, "steps": s.train.steps,
                         "lr": s.train.lr, "lr_three_param": by["three_param"].spec.train.lr,
                         "data": task.data, "mask": s.model.mask, "reduction": task.reduction},
            "runs": {k: {"first_step": v["first_step"], "final_loss": v["loss"][-1],
                         "final_theta": dict(zip(v["names"], v["theta"][-1].tolist(), strict=True)),
                         "seconds_per_step": v["seconds_per_step"]} for k, v in sgd.items()},
            "full_subspace": {"rho": report["rho"], "residual": report["residual"]},
            "literal_reference_seconds_per_step": _time_reference(task, full, B),
            "largest_final": sorted(zip(NAMES, sgd["full"]["theta"][-1].tolist(), strict=True),
                                    key=lambda kv: -abs(kv[1]))[:5],
            "curves": {k: {"steps": v["steps"], "names": v["names"], "theta": v["theta"], "loss": v["loss"]}
                       for k, v in sgd.items()}}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    s = summary["settings"]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for col, (name, r) in enumerate(summary["curves"].items()):
        theta = np.asarray(r["theta"])
        for k, pname in enumerate(r["names"]):
            lw, alpha = (2, 1) if pname in THREE_PARAM else (0.8, 0.5)
            axes[0, col].plot(r["steps"], theta[:, k], lw=lw, alpha=alpha,
                              label=pname if pname in THREE_PARAM else None)
        shown = {"three_param": "3-parameter model"}.get(name, f"{name} model")
        axes[0, col].set(title=f"{shown} (D={s['D']}, N={s['N']}, B={s['batch']})", ylabel="pseudo-parameter")
        axes[0, col].legend(fontsize=7)
        axes[1, col].plot(r["loss"])
        axes[1, col].set(xlabel="SGD step", ylabel="loss (mean over D)")
    return fig


RECIPE = Recipe("Online SGD from zero init, Gaussian data, inclusive mask, uniform query, loss averaged "
                "over D; thick lines: the 3 live coordinates (γ, β, α).", runs, summarize, plot)
