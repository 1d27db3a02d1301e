"""Fig. 8: the next-token prediction loss (context length uniform on 1..31): plateaus at the
levels of Eq. 26, with E(1/N) = H_31/31."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fastattn import plots
from fastattn.configs import resolve
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.registry import plateau_table
from fastattn.experiments.zhang2025._common import by_label, loss_panel
from fastattn.experiments.zhang2025.settings import TASK, eq19_levels, rk45, run
from fastattn.theory import zhang2025 as theory


def runs(quick: bool) -> list[RunSpec]:
    n = resolve(TASK, "separate").task["context"]
    task = {"context": tuple(range(1, n + 1))}     # next-token loss: N uniform on 1..31 (Eq. 24)
    return [run("merged", "merged", {"model": "merged"}, task=task, model={"heads": 8},
                train=rk45(1e4, n_records=800, n_snapshots=20)),
            run("separate", "separate", {"model": "separate"}, task=task, model={"heads": 4},
                train=rk45(1e6, n_records=800, n_snapshots=20))]


#: context lengths drawn to estimate E(1/N) from the sampler (s.e. ≈ 0.19/√n ≈ 4e-4)
SAMPLED_LENGTHS = 200_000


def sampled_inv_n(task, n: int = SAMPLED_LENGTHS, seed: int = 7) -> tuple[float, float]:
    """E(1/N) and its standard error over the context lengths of `n` prompts the task's sampler
    draws (an independent check of Eq. 26's H_31/31, which the population moments use)."""
    stream = dataclasses.replace(task, data_seed=seed)
    inv = np.concatenate([1.0 / stream.sample(20_000, k).lengths.double().numpy()
                          for k in range(-(-n // 20_000))])[:n]
    return float(inv.mean()), float(inv.std(ddof=1) / np.sqrt(n))


def summarize(runs: list[Run]) -> dict[str, Any]:
    r = by_label(runs)
    task = r["separate"].spec.task
    levels = eq19_levels(task)
    inv_n, inv_n_se = sampled_inv_n(task)
    return {"inv_n_sampled": inv_n, "inv_n_sampled_se": inv_n_se,
            "H31_over_31": theory.expected_inv_n_uniform(task.max_context),
            "separate": plateau_table(r["separate"].traj, levels),
            "merged_final": float(r["merged"].traj.loss[-1]), "L_star_eq26": float(levels[-1]),
            "merged_final_minus_L_star": float(r["merged"].traj.loss[-1] - levels[-1])}


def plot(runs: list[Run], summary: dict[str, Any]):
    fig, ax = plots.plt.subplots(1, 1, figsize=(7, 4.5))
    loss_panel(ax, runs, eq19_levels(runs[0].spec.task), label_key="model",
               levels_label="theory (Eq. 26: Eq. 19 with E(1/N))")
    ax.set_title(f"next-token loss, E(1/N) = H_31/31 = {summary['H31_over_31']:.5f}; dashed: Eq. 26",
                 fontsize=9)
    return fig



RECIPE = Recipe(
    "Exact population flow of the next-token loss (context length uniform on 1..31, each sequence "
    "divided by its own N), D=4, λ=(.4,.3,.2,.1), merged H=8 init 1e-3, separate H=4 R=1 init 1e-2.",
    runs, summarize, plot)
