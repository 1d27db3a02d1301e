"""Figs. 3 and 9–17 (App. C, spec §6.1, §11.5): heat maps of W1, W2, W3 of the full disentangled
transformer after online SGD (Gaussian data, D = 16, λ = 1, B = 512, mean reduction, inclusive mask,
uniform query, zero init), with Theorem 1's structure drawn beside them: the projection Σ θ_k B_k
onto the 19-dimensional subspace (Fig. 3), and per snapshot the in-subspace fractions ρ and the
largest pseudo-parameters (Figs. 9–17: N = 4 after 100/200/400 steps, N = 8 after 200/400/800,
N = 16 after 250/500/1000)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import plots
from fastattn.analysis.pseudo_params import embed, subspace_report
from fastattn.experiments.musat2025 import sgd
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.models.disentangled import NAMES, THREE_PARAM

_MATRICES = ("W1", "W2", "W3ᵀ")
#: --quick trains each run this many times fewer steps
_QUICK_STEPS = 5
#: Fig. 3's step (App. C's first run, N = 4)
FIG3_STEPS = (400,)


def _shots(snapshots: tuple[int, ...], quick: bool) -> tuple[int, ...]:
    """The steps whose weights a figure shows (quick: ÷ `_QUICK_STEPS`)."""
    return tuple(max(1, s // _QUICK_STEPS) for s in snapshots) if quick else snapshots


def _spec(task: dict[str, Any], snapshots: tuple[int, ...], quick: bool) -> RunSpec:
    """Figs. 4/5's preset (D = 16, N = 4, B = 512) with the task options `task`, to the last of
    `snapshots` (quick: D = 8, B = 64, the steps ÷ 5)."""
    train = {"steps": max(_shots(snapshots, quick))} | ({"batch_size": 64} if quick else {})
    task = {"data": "gaussian"} | task | ({"dim": 8} if quick else {})
    return sgd.sgd_spec("full", task=task, train=train)


def _settings(spec: RunSpec, snapshots: tuple[int, ...], quick: bool) -> dict[str, Any]:
    """What the summary records of the run `spec`, showing the weights at `snapshots`."""
    t = spec.task
    return {"D": t.dim, "N": t.context, "batch": spec.train.batch_size,
            "snapshots": list(_shots(snapshots, quick)), "lr": spec.train.lr, "data": t.data,
            "query": t.query, "mask": spec.model.mask, "reduction": t.reduction,
            "data_seed": t.data_seed}


def _setting(task: dict[str, Any], snapshots: tuple[int, ...]) -> str:
    """The caption's words for the run `_spec(task, snapshots)`, read off its spec at full size
    and at --quick, so that a change of the preset or of the quick sizes changes the caption."""
    full, quick = (_settings(_spec(task, snapshots, q), snapshots, q) for q in (False, True))
    steps = ("/".join(str(k) for k in s["snapshots"]) for s in (full, quick))
    return (f"D = {full['D']}, N = {full['N']}, B = {full['batch']}, λ = {full['lr']:g}, "
            f"steps {next(steps)} (--quick: D = {quick['D']}, B = {quick['batch']}, steps "
            f"{next(steps)}; App. C: {full['data']} data, {full['query']} query, {full['mask']} "
            f"mask, {full['reduction']} loss over D)")


def _snapshot_summary(weights, loss: float) -> dict[str, Any]:
    rep = subspace_report(*weights)
    theta = rep["theta"]
    order = np.argsort(-np.abs(theta))
    return {"loss": loss, "theta": dict(zip(NAMES, theta.tolist(), strict=True)),
            "largest": [[NAMES[k], float(theta[k])] for k in order[:5]],
            "rho": dict(zip(("W1", "W2", "W3"), rep["rho"], strict=True)), "rho_total": rep["rho_total"],
            "residual": dict(zip(("W1", "W2", "W3"), rep["residual"], strict=True)),
            "weights": {name: np.asarray(w) for name, w in zip(("W1", "W2", "W3"), weights, strict=True)}}


def _summarize(runs: list[Run], snapshots: tuple[int, ...], quick: bool) -> dict[str, Any]:
    (run,) = runs
    s = _settings(run.spec, snapshots, quick)
    r = sgd.curves(run)
    at = {int(k): i for i, k in enumerate(sgd.snapshot_steps(run))}
    snaps = {str(k): _snapshot_summary(sgd.weights(run, at[k]), r["loss"][k]) for k in s["snapshots"]}
    last = snaps[str(max(s["snapshots"]))]
    return {"settings": s, "first_step": r["first_step"], "seconds_per_step": r["seconds_per_step"],
            "snapshots": snaps, "final": {"top3_is_induction_head": top3_is_induction_head(last["theta"]),
                                          "rho": last["rho"]}}


def top3_is_induction_head(theta: dict[str, float]) -> float:
    """1.0 if the three pseudo-parameters of largest |θ| are α₃, β₂, γ₃ (Figs. 3–4), else 0.0."""
    top = sorted(theta, key=lambda k: -abs(theta[k]))[:3]
    return float(set(top) == set(THREE_PARAM))


def _draw(ax, w: np.ndarray, D: int, title: str) -> None:
    vmax = float(np.abs(w).max()) or 1.0
    plots.heatmap(ax, w, colorbar="weight", tick_step=D, cmap="RdBu_r", vmin=-vmax, vmax=vmax,
                  interpolation="nearest", xlabel="input coordinate (blocks of D)",
                  ylabel="output coordinate (blocks of D)")
    for k in range(1, w.shape[0] // D):
        ax.axhline(k * D - 0.5, color="k", lw=0.4)
    for k in range(1, w.shape[1] // D):
        ax.axvline(k * D - 0.5, color="k", lw=0.4)
    ax.set_title(title, fontsize=8)


def _row(axes, weights, D: int, label: str, rho=None) -> None:
    W1, W2, W3 = weights
    for ax, name, w, k in zip(axes, _MATRICES, (W1, W2, W3.T), range(3), strict=True):
        extra = f", ρ = {rho[k]:.3f}" if rho is not None else ""
        _draw(ax, w, D, f"{label}: {name}{extra} (D = {D})")


def _grid(rows: int):
    return plots.plt.subplots(rows, 3, figsize=(15, 3.6 * rows + 0.9), layout="constrained",
                              gridspec_kw={"width_ratios": [1, 1.6, 2.2]})


def _largest(snap: dict[str, Any]) -> str:
    return ", ".join(f"{n} {v:+.2f}" for n, v in snap["largest"][:3])


# --------------------------------------------------------------------------------------------
# Fig. 3
def fig3_runs(quick: bool) -> list[RunSpec]:
    return [_spec({}, FIG3_STEPS, quick)]


def fig3_summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    """The weights after `FIG3_STEPS` at N = 4 (Fig. 3 gives no N; App. C's first run), their
    pseudo-parameters θ, projection residuals and in-subspace fractions ρ."""
    return _summarize(runs, FIG3_STEPS, quick)


def fig3_plot(runs: list[Run], summary: dict[str, Any]):
    s = summary["settings"]
    (step, snap), = summary["snapshots"].items()
    weights = [np.asarray(snap["weights"][n]) for n in ("W1", "W2", "W3")]
    proj = embed([snap["theta"][n] for n in NAMES], s["D"])
    fig, axes = _grid(2)
    _row(axes[0], weights, s["D"], f"SGD step {step}", [snap["rho"][n] for n in ("W1", "W2", "W3")])
    _row(axes[1], proj, s["D"], "Theorem 1 projection Σθ_k B_k")
    fig.supxlabel(f"largest pseudo-parameters θ_k: {_largest(snap)}", fontsize=9)
    return fig


FIG3 = Recipe(f"{_setting({}, FIG3_STEPS)}. Top: the trained weights (W3 transposed), ρ = in-subspace "
              "fraction. Bottom: their projection onto Theorem 1's 19 basis matrices (blocks 0, c·I or "
              "c₁I + c₂M).", fig3_runs, fig3_summarize, fig3_plot)


# --------------------------------------------------------------------------------------------
# Figs. 9–17: one recipe per N
def _snapshots_recipe(task: dict[str, Any], snapshots: tuple[int, ...]) -> Recipe:
    """The figure of the run `_spec(task, snapshots)` at its `snapshots`."""
    def runs(quick: bool) -> list[RunSpec]:
        return [_spec(task, snapshots, quick)]

    def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
        return _summarize(runs, snapshots, quick)

    def plot(runs: list[Run], summary: dict[str, Any]):
        s = summary["settings"]
        fig, axes = _grid(len(summary["snapshots"]))
        for row, (step, snap) in zip(axes, summary["snapshots"].items(), strict=True):
            weights = [np.asarray(snap["weights"][n]) for n in ("W1", "W2", "W3")]
            _row(row, weights, s["D"], f"step {step}", [snap["rho"][n] for n in ("W1", "W2", "W3")])
            row[0].set_ylabel(f"loss {snap['loss']:.3f}; {_largest(snap)}", fontsize=7)
        return fig

    caption = (f"{_setting(task, snapshots)}: the weights after each listed number of SGD steps (W3 "
               "transposed; block lines every D); ρ = in-subspace fraction; left label: batch loss and "
               "the three largest pseudo-parameters.")
    return Recipe(caption, runs, summarize, plot)


FIG9_11 = _snapshots_recipe({}, (100, 200, 400))
FIG12_14 = _snapshots_recipe({"context": 8}, (200, 400, 800))
FIG15_17 = _snapshots_recipe({"context": 16}, (250, 500, 1000))
