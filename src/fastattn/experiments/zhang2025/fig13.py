"""Fig. 13: repeated eigenvalues, R = 1: a degenerate pair of directions is learned together, so the
flow skips a plateau level, depending on the seed."""

from __future__ import annotations

from typing import Any

from fastattn import analysis, plots
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.registry import plateau_table
from fastattn.experiments.zhang2025._common import MIN_DECADES, loss_panel, nearest_m
from fastattn.experiments.zhang2025.settings import eq19_levels, flow_config, rotated_task
from fastattn.models import SeparateConfig

D4_REPEATED = (0.35, 0.35, 0.15, 0.15)


def runs(quick: bool) -> list[RunSpec]:
    return [RunSpec(f"seed{s}", rotated_task(D4_REPEATED, seed=s),
                    SeparateConfig(4, 4, 1, init_scale=1e-2, init_seed=s),
                    flow_config(1e5 if quick else 3e5, snapshots=100, n_records=800), {"seed": s})
            for s in range(2 if quick else 6)]


def summarize(runs: list[Run]) -> dict[str, Any]:
    out = {}
    for r in runs:
        levels = eq19_levels(r.spec.task)
        plats, _ = analysis.find_plateaus_and_drops(r.traj.time, r.traj.loss)
        ms = [nearest_m(p.level, levels) for p in plats if p.decades >= MIN_DECADES]
        out[r.spec.label] = {"levels": plateau_table(r.traj, levels), "ms_visited": ms,
                             "skipped_ms": [m for m in range(len(levels)) if m not in ms]}
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    fig, ax = plots.plt.subplots(1, 1, figsize=(6.5, 4.2))
    loss_panel(ax, runs, eq19_levels(runs[0].spec.task), label_key="seed")
    ax.set_title("plateaus within degenerate eigenspaces, seed-dependent", fontsize=9)
    return fig



RECIPE = Recipe(
    "Exact flow, D=4, N=31, H=4, λ=(.35,.35,.15,.15), init 1e-2 (App. C.2). Dashed: Eq. 19.",
    runs, summarize, plot)
