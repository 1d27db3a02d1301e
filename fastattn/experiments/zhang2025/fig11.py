"""Fig. 11: value weights of rank-R separate KQ: a new value weight escapes only at the conspicuous
plateaus (m a multiple of R)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import analysis, plots
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.zhang2025._common import conspicuous, loss_panel
from fastattn.experiments.zhang2025.settings import eq19_levels, rk45, run
from fastattn.theory import zhang2025 as theory


def runs(quick: bool) -> list[RunSpec]:
    return [run(f"R{r}", "separate", {"rank": r}, model={"rank": r},
                train=rk45(1e6, n_records=800, n_snapshots=400)) for r in (2, 3, 4)]


def value_escapes(run: Run) -> list[float]:
    """Times at which a value weight |v_i| first reaches half its final size (only heads that grow
    beyond 10% of the largest final |v|)."""
    v = np.abs(analysis.value_weights(run.traj.params, run.spec.model.heads))
    t = run.traj.snapshot_time
    big = v[-1] > 0.1 * v[-1].max()
    return sorted(float(t[np.argmax(v[:, h] >= 0.5 * v[-1, h])]) for h in np.flatnonzero(big))


def summarize(runs: list[Run]) -> dict[str, Any]:
    out = {}
    for r in runs:
        c = conspicuous(r)
        _, drops = analysis.find_plateaus_and_drops(r.traj.time, r.traj.loss)
        esc = value_escapes(r)
        c.update({"value_escape_times": esc, "n_value_escapes": len(esc),
                  "predicted_n_value_escapes": theory.n_conspicuous_plateaus(4, r.spec.model.rank),
                  "drop_times": [d.time for d in drops]})
        out[r.spec.label] = c
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    fig, axes = plots.plt.subplots(2, len(runs), figsize=(4.5 * len(runs), 7), squeeze=False)
    for j, r in enumerate(runs):
        loss_panel(axes[0, j], [r], eq19_levels(r.spec.task))
        s = summary[r.spec.label]
        axes[0, j].set_title(f"R={r.spec.model.rank}: {s['n_conspicuous']} conspicuous plateaus "
                             f"(rule {s['predicted_n']})", fontsize=9)
        ax = axes[1, j]
        v = np.abs(analysis.value_weights(r.traj.params, r.spec.model.heads))
        t = r.traj.snapshot_time
        ax.semilogx(t[1:], v[1:], lw=1.2)
        for te in s["value_escape_times"]:
            ax.axvline(te, color="0.5", ls=":", lw=0.8)
        ax.set_xlabel("time t")
        ax.set_ylabel("|v_i|")
        ax.set_title(f"{s['n_value_escapes']} value weights escape (rule {s['predicted_n_value_escapes']})",
                     fontsize=9)
    return fig



RECIPE = Recipe(
    "Exact flow (RK45), D=4, N=31, H=5, λ=(.4,.3,.2,.1), init 1e-2 (App. C.2), R=2,3,4. A new value "
    "weight escapes only at the conspicuous plateaus (m a multiple of R).",
    runs, summarize, plot)
