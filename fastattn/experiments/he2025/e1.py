"""E1: KQ/OV circuits of trained H-head softmax attention as heat maps, with the pattern metrics of
spec §4.2 (diagonal KQ, last-entry OV, sign matching, zero-sum OV, homogeneous |ω|, η_eff)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import plots
from fastattn.analysis.patterns import pattern_metrics
from fastattn.experiments.he2025.settings import L_TRAIN, SIGMA2, D, trained_heads
from fastattn.experiments.recipe import Recipe, Run
from fastattn.theory import he2025 as th


def runs(quick: bool = False) -> list:
    return trained_heads(quick, None if quick else (1, 2, 3, 4, 8))


def _circuits(model) -> tuple[np.ndarray, np.ndarray]:
    return (model.extract_kq().detach().double().numpy(),
            model.extract_ov().detach().double().numpy())


def summarize(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {"eta_star": th.eta_star(D, L_TRAIN, SIGMA2), "models": {}}
    for run in runs:
        kq, ov = _circuits(run.model)
        out["models"][run.spec.label] = {"heads": run.spec.group["heads"],
                                         "metrics": pattern_metrics(kq, ov),
                                         "kq": kq, "ov": ov}
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    heads = [summary["models"][r.spec.label]["heads"] for r in runs]
    fig, axes = plt.subplots(len(runs), 2 * max(heads), figsize=(1.3 * 2 * max(heads) + 1, 1.5 * len(runs)),
                             squeeze=False, layout="constrained")
    for i, run in enumerate(runs):
        m = summary["models"][run.spec.label]
        for h in range(max(heads)):
            for j, (mat, name) in enumerate(((m["kq"], "KQ"), (m["ov"], "OV"))):
                ax = axes[i, 2 * h + j]
                if h >= m["heads"]:
                    ax.axis("off")
                    continue
                a = np.asarray(mat[h] if name == "KQ" else mat[h][None, :])
                # each panel on its own scale (heads differ by orders of magnitude), one shared bar
                im = plots.heatmap(ax, a / (float(np.abs(a).max()) or 1.0), colorbar=None,
                                   cmap="RdBu_r", vmin=-1, vmax=1)
                ax.tick_params(labelsize=5)
                ax.set_title(f"{run.spec.label} {name}{h + 1}", fontsize=6)
    fig.colorbar(im, ax=axes, label="entry / largest |entry| of its panel", shrink=0.8)
    return fig


RECIPE = Recipe("Per-head KQ (scaled) and the effective OV row; metrics in the JSON.",
                runs, summarize, plot)
