"""Panels and summaries shared by several Zhang et al. 2025 figures."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import analysis, plots, population
from fastattn.experiments.registry import Run, plateau_table
from fastattn.experiments.zhang2025.settings import eq19_levels
from fastattn.theory import zhang2025 as theory

MIN_DECADES = 0.1     # a plateau lasting at least a factor 10^0.1 ≈ 1.26 in time counts as conspicuous


def loss_panel(ax, runs: list[Run], levels=None, label_key: str | None = None, x: str = "time",
               levels_label: str = "theory (Eq. 19)"):
    """Loss curves of `runs` on log time, labelled by `group[label_key]`, with the predicted plateau
    `levels` (Eq. 19 unless `levels_label` names another source)."""
    plots.loss_axes(ax, log_time=True, xlabel="time t (τ = 1)" if x == "time" else "step")
    for run in runs:
        label = f"{label_key.replace('_', ' ')} = {run.spec.group[label_key]}" if label_key else None
        plots.plot_loss(ax, run.traj, label=label, x=x, lw=1.2)
    if levels is not None:
        plots.draw_levels(ax, levels, label=levels_label)
    ax.legend(fontsize=7)


def level_summary(runs: list[Run]) -> dict[str, Any]:
    """Each run's detected plateaus matched to its Eq. 19 levels, by run label."""
    out = {}
    for run in runs:
        out[run.spec.label] = plateau_table(run.traj, eq19_levels(run.spec.task))
    return out


def conservation_drift(run: Run) -> float:
    """The largest change over the run's snapshots of the quantities gradient flow conserves
    (Eq. 55 for ATTN_M: w₂w₂ᵀ − W₁W₁ᵀ; Eq. 89 for ATTN_S: ‖k_i‖² − ‖q_i‖² and ‖k_i‖² − v_i²),
    relative to the largest squared weight of the run: 0 for an exact flow."""
    params = run.traj.params                                           # [S, P]
    drift = max(float(np.max(np.abs(c - c[:1])))
                for c in population.conserved_quantities(run.model.config, params).values())
    return drift / float(np.max(params ** 2))


def by_label(runs: list[Run]) -> dict[str, Run]:
    return {r.spec.label: r for r in runs}


def gamma_of(run: Run, params: np.ndarray) -> np.ndarray:
    """Γ `[D, D]` (the effective in-context weight) of a merged or separate run at `params`."""
    return population.gamma(run.model.config, params)


def nearest_m(level: float, levels: np.ndarray) -> int:
    """The m whose Eq. 19 level L(M_m) is nearest to `level` (in log)."""
    return int(np.argmin(np.abs(np.log(levels) - np.log(level))))


def conspicuous(run: Run, min_decades: float = MIN_DECADES) -> dict[str, Any]:
    """Conspicuous plateaus of a run (not counting the converged level) against the rank-R rule."""
    task, cfg = run.spec.task, run.spec.model
    levels = eq19_levels(task)
    plateaus, drops = analysis.find_plateaus_and_drops(run.traj.time, run.traj.loss)
    found = [p for p in analysis.conspicuous_plateaus(plateaus, min_decades, include_last=True)
             if not (p.reaches_end and nearest_m(p.level, levels) == len(levels) - 1)]
    ms = [nearest_m(p.level, levels) for p in found]
    predicted = theory.conspicuous_plateau_ms(cfg.dim, cfg.rank)
    return {"rank": cfg.rank, "n_conspicuous": len(found), "predicted_n": len(predicted),
            "ms_measured": ms, "ms_predicted": predicted,
            "levels_measured": [p.level for p in found],
            "levels_predicted": [float(levels[m]) for m in ms],
            "max_rel_level_difference": float(max((abs(p.level - levels[m]) / levels[m]
                                                   for p, m in zip(found, ms, strict=True)), default=0.0)),
            "durations_decades": [p.decades for p in found],
            "final_loss": float(run.traj.loss[-1]), "L_star": float(levels[-1]),
            "n_drops": len(drops)}
