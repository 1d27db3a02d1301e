"""Fig. 6: initialisation scale, separate KQ R = 1: larger inits shorten the plateaus (Eq. 72);
init 1 is lazy (no plateau)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import analysis, plots
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.zhang2025._common import conspicuous, loss_panel
from fastattn.experiments.zhang2025.settings import D4, eq19_levels, rk45_config, rotated_task
from fastattn.models import SeparateConfig
from fastattn.theory import zhang2025 as theory


def runs(quick: bool) -> list[RunSpec]:
    scales = (1e-2, 1e-1, 1.0) if quick else (1e-3, 1e-2, 1e-1, 0.3, 1.0)
    task = rotated_task(D4, seed=0)
    return [RunSpec(f"init{w:g}", task, SeparateConfig(4, 4, 1, init_scale=w, init_seed=0),
                    rk45_config(1e7, task, records=800, snapshots=40), {"init_scale": w}) for w in scales]


def summarize(runs: list[Run]) -> dict[str, Any]:
    out = {}
    for r in runs:
        task = r.spec.task
        c = conspicuous(r)
        _, drops = analysis.find_plateaus_and_drops(r.traj.time, r.traj.loss)
        v0 = np.abs(analysis.value_weights(r.traj.params[0], r.spec.model.heads))
        vf = np.abs(analysis.value_weights(r.traj.params[-1], r.spec.model.heads))
        # Eq. 72 needs v(0) of the head that learns e_1: the one aligned with e_1 at the end
        _, k, _ = analysis.split_separate(r.traj.params[-1], r.spec.model.heads, 1, 4)
        aligned = np.flatnonzero(analysis.best_aligned(k[:, 0], task.eigvecs) == 0)
        first = int(aligned[np.argmax(vf[aligned])]) if aligned.size else int(np.argmax(vf))
        t_half = float(np.interp(0.5, (1 - (r.traj.loss - c["L_star"]) / (1 - c["L_star"])), r.traj.time))
        out[r.spec.label] = {"init_scale": r.spec.model.init_scale, "n_conspicuous": c["n_conspicuous"],
                             "first_drop_time": drops[0].time if drops else float("nan"),
                             "eq72_first_plateau": theory.plateau_duration(float(task.eigvals[0]), v0[first]),
                             "half_loss_time": t_half, "final_loss": c["final_loss"], "L_star": c["L_star"]}
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    fig, ax = plots.plt.subplots(1, 1, figsize=(7, 4.5))
    loss_panel(ax, runs, eq19_levels(runs[0].spec.task), label_key="init_scale")
    for i, r in enumerate(runs):
        ax.axvline(summary[r.spec.label]["eq72_first_plateau"], color=f"C{i}", ls=":", lw=0.8)
    ax.set_title("larger init: shorter plateaus; init 1 is lazy (no plateau). Dotted: Eq. 72", fontsize=9)
    return fig



RECIPE = Recipe(
    "Exact flow (RK45), D=4, N=31, H=4, λ=(.4,.3,.2,.1), App. C.2 init with w_init from 1e-3 to 1.",
    runs, summarize, plot)
