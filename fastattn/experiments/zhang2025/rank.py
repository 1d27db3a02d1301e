"""Figs. 4 and 12: rank-R separate KQ at D = 8: ⌈D/R⌉ conspicuous plateaus at the Eq. 19 levels of
m = 0, R, 2R, … (Fig. 4: R = 1, 2, 4, 8; Fig. 12: R = 3, 5, 6, 7)."""

from __future__ import annotations

from typing import Any

from fastattn import plots
from fastattn.experiments.claims import seed_summary
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.zhang2025._common import MIN_DECADES, conspicuous, loss_panel
from fastattn.experiments.zhang2025.settings import SPECTRUM_D8, eq19_levels, rk45, run
from fastattn.theory import zhang2025 as theory


def rank_runs(quick: bool, ranks: tuple[int, ...], spectrum: str = "text",
              seeds: int | None = None) -> list[RunSpec]:
    # GRAD_TOL ends every run (the last, rank-1, by t ≈ 4e5 with λ ∝ 1/d); the horizon, ≈ 3× that
    # (Eq. 72: the m-th plateau lasts ∝ 1/(λ_m² v(0))), only bounds a run that would not converge
    t_end = 1e6 if spectrum == "text" else 1e7
    n = seeds if seeds is not None else (1 if quick else 3)
    return [run(f"R{r}_seed{s}", "separate", {"rank": r, "seed": s},
                task={"dim": 8, "spectrum": SPECTRUM_D8[spectrum], "rotation_seed": s},
                model={"heads": 9, "rank": r, "init_seed": s},
                train=rk45(t_end, n_records=800, n_snapshots=60))
            for r in ranks for s in range(n)]


def summarize(runs: list[Run]) -> dict[str, Any]:
    """Each run's conspicuous plateaus; per rank, the counts over every seed (`seed_summary`, the
    claims read these) against the rule; the final loss of every run."""
    out = {r.spec.label: conspicuous(r) for r in runs}
    by_rank: dict[int, list[int]] = {}
    for r in runs:
        by_rank.setdefault(r.spec.model.rank, []).append(out[r.spec.label]["n_conspicuous"])
    return {"runs": out, "min_decades": MIN_DECADES,
            "by_rank": {f"R{k}": {"measured": v, "n_conspicuous": seed_summary(v),
                                  "predicted": theory.n_conspicuous_plateaus(8, k)}
                        for k, v in by_rank.items()},
            "final_loss": seed_summary([c["final_loss"] for c in out.values()])}


def plot(runs: list[Run], summary: dict[str, Any]):
    ranks = sorted({r.spec.model.rank for r in runs})
    fig, axes = plots.plt.subplots(1, len(ranks), figsize=(4.2 * len(ranks), 4), squeeze=False)
    for ax, rank in zip(axes[0], ranks, strict=True):
        sub = [r for r in runs if r.spec.model.rank == rank]
        loss_panel(ax, sub, eq19_levels(sub[0].spec.task), label_key="seed")
        b = summary["by_rank"][f"R{rank}"]
        per_seed = "" if len(b["measured"]) == 1 else " (per seed)"
        ax.set_title(f"R = {rank}: {', '.join(map(str, b['measured']))} conspicuous plateaus"
                     f"{per_seed}, ⌈D/R⌉ = {b['predicted']} predicted", fontsize=9)
    return fig


def fig4_runs(quick: bool, spectrum: str = "text") -> list[RunSpec]:
    return rank_runs(quick, (1, 2, 4, 8), spectrum)


def fig12_runs(quick: bool, spectrum: str = "text") -> list[RunSpec]:
    return rank_runs(quick, (3, 5, 6, 7), spectrum)


CAPTION = ("Exact flow (RK45), D=8, N=31, H=9, init 1e-2 (App. C.2), λ∝1/d (caption; option "
           "spectrum=code: the code's λ∝9−d). Dashed: Eq. 19; conspicuous = ≥ 0.1 decades.")
FIG4 = Recipe(CAPTION, fig4_runs, summarize, plot)
FIG12 = Recipe(CAPTION, fig12_runs, summarize, plot)
