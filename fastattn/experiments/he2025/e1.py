"""E1: KQ/OV circuits of trained H-head softmax attention as heat maps, with the pattern metrics of
spec §4.2 (diagonal KQ, last-entry OV, sign matching, zero-sum OV, homogeneous |ω|, η_eff)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import plots
from fastattn.analysis.patterns import pattern_metrics
from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import L_TRAIN, SIGMA2, D, task, trained_heads
from fastattn.experiments.recipe import Recipe, Run
from fastattn.theory import he2025 as th

#: Monte-Carlo prompts for each model's risk at the training length (s.e. ≈ 0.003 at dGD's 0.243)
N_PROMPTS = 20_000


def runs(quick: bool = False) -> list:
    return trained_heads(quick, None if quick else (1, 2, 3, 4, 8))


def _circuits(model) -> tuple[np.ndarray, np.ndarray]:
    return (model.extract_kq().detach().double().numpy(),
            model.extract_ov().detach().double().numpy())


def summarize(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {"eta_star": th.eta_star(D, L_TRAIN, SIGMA2), "models": {}}
    for run in runs:
        kq, ov = _circuits(run.model)
        m = pattern_metrics(kq, ov)
        risk = monte_carlo_risk(run.model, task(), N_PROMPTS, seed=L_TRAIN)
        out["models"][run.spec.label] = {"heads": run.spec.group["heads"], "metrics": m,
                                         "kq": kq, "ov": ov, "risk": risk.mean, "risk_se": risk.se}
    out["patterns"] = _patterns(out["models"])
    return out


def _patterns(models: dict[str, Any]) -> dict[str, Any]:
    """Key Findings 1–2 over every model (no chosen model): the smallest KQ-diagonal ratio M1 and
    OV last-entry ratio M3 over live heads, the fraction of models whose live heads are all
    sign-matched, and for H ≥ 2 the largest zero-sum M9 and the fraction of models with both a
    positive and a negative head."""
    live = [(np.asarray(m["metrics"]["diag_ratio"]), np.asarray(m["metrics"]["ov_last_ratio"]),
             ~np.asarray(m["metrics"]["dummy"], dtype=bool)) for m in models.values()]
    multi = [m for m in models.values() if m["heads"] >= 2]
    signs = [np.asarray(m["metrics"]["sign"])[~np.asarray(m["metrics"]["dummy"], dtype=bool)]
             for m in multi]
    return {"min_diag_ratio": float(min(d[k].min() for d, _, k in live)),
            "min_ov_last_ratio": float(min(o[k].min() for _, o, k in live)),
            "fraction_sign_matched": float(np.mean([m["metrics"]["sign_match"] == 1
                                                    for m in models.values()])),
            "max_zero_sum": float(max((m["metrics"]["zero_sum"] for m in multi), default=np.nan)),
            "fraction_positive_and_negative": float(np.mean([(s > 0).any() and (s < 0).any()
                                                             for s in signs])) if signs else None}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    heads = [summary["models"][r.spec.label]["heads"] for r in runs]
    fig, axes = plt.subplots(len(runs), 2 * max(heads), figsize=(2.1 * 2 * max(heads) + 1, 2.2 * len(runs)),
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
                                   cmap="RdBu_r", vmin=-1, vmax=1,
                                   xlabel="key coordinate" if name == "KQ" else "value coordinate",
                                   ylabel="query coordinate" if name == "KQ" else "output")
                if name == "OV":
                    ax.set_yticks([])
                ax.tick_params(labelsize=7)
                ax.set_title(f"H = {m['heads']}: {name} of head {h + 1}", fontsize=8)
    fig.colorbar(im, ax=axes, label="entry / largest |entry| of its panel", shrink=0.8)
    return fig


RECIPE = Recipe("Per-head KQ (scaled) and the effective OV row; metrics in the JSON.",
                runs, summarize, plot)
