"""Fig. 13: repeated eigenvalues, four panels R = 1, 2, 3, 4: with R = 1 a degenerate pair of directions
can still be learned one head at a time (a plateau whose length depends only on the random init) or
together (the plateau is skipped), depending on the seed."""

from __future__ import annotations

from typing import Any

from fastattn import analysis, plots
from fastattn.experiments.claims import seed_summary
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.registry import plateau_table
from fastattn.experiments.zhang2025._common import MIN_DECADES, loss_panel, nearest_m
from fastattn.experiments.zhang2025.settings import eq19_levels, rk45, run

D4_REPEATED = (0.35, 0.35, 0.15, 0.15)
RANKS = (1, 2, 3, 4)          # the caption: "the four panels differ only in the rank", D = 4


def runs(quick: bool) -> list[RunSpec]:
    out = []
    for rank in RANKS:
        for s in range(2 if quick else 6):
            out.append(run(f"R{rank}_seed{s}", "separate", {"rank": rank, "seed": s},
                           task={"spectrum": ",".join(map(str, D4_REPEATED)), "rotation_seed": s},
                           model={"heads": 4, "rank": rank, "init_seed": s},
                           train=rk45(1e6, n_records=800, n_snapshots=20)))
    return out


def summarize(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {f"R{rank}": {} for rank in RANKS}
    for r in runs:
        levels = eq19_levels(r.spec.task)
        plats, _ = analysis.find_plateaus_and_drops(r.traj.time, r.traj.loss)
        ms = sorted({nearest_m(p.level, levels) for p in plats if p.decades >= MIN_DECADES})
        out[f"R{r.spec.group['rank']}"][f"seed{r.spec.group['seed']}"] = {
            "levels": plateau_table(r.traj, levels), "ms_visited": ms,
            # the run stops at L*, so the converged level m = D is not a plateau here
            "skipped_ms": [m for m in range(len(levels) - 1) if m not in ms],
            "final_loss": float(r.traj.loss[-1]), "status": r.traj.status}
    # each rank's levels m over every seed (None where that seed's run does not resolve it)
    out["across_seeds"] = {
        rank: {str(m): seed_summary([s["levels"]["measured_levels"][m] for s in seeds.values()])
               for m in range(len(D4_REPEATED) + 1)}
        for rank, seeds in list(out.items())}
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    fig, axes = plots.plt.subplots(1, len(RANKS), figsize=(18, 4.4), sharey=True)
    for ax, rank in zip(axes, RANKS, strict=True):
        these = [r for r in runs if r.spec.group["rank"] == rank]
        loss_panel(ax, these, eq19_levels(these[0].spec.task), label_key="seed")
        ax.set_title(f"R = {rank}", fontsize=10)
    return fig


RECIPE = Recipe(
    "Exact flow (RK45, stopped at L*), D=4, N=31, H=4, λ=(.35,.35,.15,.15), init 1e-2 (App. C.2); the panels "
    "differ only in the rank R. Dashed: Eq. 19. With R=1, plateaus within a degenerate eigenspace are "
    "seed-dependent (sometimes skipped).",
    runs, summarize, plot)
