"""Figs. 5 and 6 of Mainali & Teixeira 2025: attention-only transformers of 1–4 layers during the
emergence of in-context learning. Fig. 5: subspace distance (Eq. 16) of the per-head matrices to
their final values, averaged over OV and QK, layers and heads; Fig. 6: marginalised effective rank
(spec §8.2, Variant B) of OV (A) and QK (B), averaged over layers and heads. The ICL-emergence
window (spec §8.7) is shaded.

The paper used Anthropic's / TransformerLens' pretrained attn-only-{1..4}l checkpoints (spec §9.8);
they cannot be downloaded here, so we train small attention-only models (LayerNorm, learned
positions, causal, 4 heads) on periodic random tokens with a random period
(`fastattn.tasks.tokens.RepeatedTokens`), where two or more layers form induction heads and one
layer cannot. Full: vocabulary 64, length 24, d_model 64 (d_head 16), batch 32, AdamW lr 3e-3
(β = (0.9, 0.99), wd 0.05, 10 warm-up steps), 1500 steps, 1–4 layers (the two-layer run is the
CLI's default for `--task repeated_tokens --model transformer`). Quick: vocabulary 32, length 16,
d_model 32, lr 1e-2, 200 steps, 1–2 layers (a smoke test: induction heads are only starting to
form).

Both figures list the same runs (`runs`, one per depth, trained by `fastattn.train`); `summarize`
reads the held-out metrics and the parameter snapshots (one at every record) of the finished runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import plots
from fastattn.experiments.mainali2025 import apps
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run


def runs(quick: bool) -> list[RunSpec]:
    """One run per depth ("1L", "2L", ...) of the (repeated_tokens, transformer) preset (AdamW on
    fresh batches, the metrics and a parameter snapshot at the same log-spaced records), one thread
    (the numbers do not depend on the machine's load); quick: V = 32, length 16, d_model 32, 200
    steps of lr 1e-2."""
    depths = (1, 2) if quick else (1, 2, 3, 4)
    task, model, train = {}, {}, {"threads": 1}
    if quick:
        task, model = {"vocab": 32, "length": 16}, {"d_model": 32}
        train |= {"lr": 1e-2, "steps": 200, "test_size": 128, "n_records": 30, "n_snapshots": 30}
    return [preset_run(f"{n}L", "repeated_tokens", "transformer", group={"layers": n}, task=task,
                       model=model | {"n_layers": n}, train=train) for n in depths]


def summarize(runs_: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for run in runs_:
        t = apps.record_steps(run)
        layers = run.spec.model.n_layers
        icl = run.traj.metrics["icl_score"]
        window = apps.drop_window(t, icl) if layers >= 2 else None
        ov, qk = apps.head_summary(run, "ov"), apps.head_summary(run, "qk")
        subdist = 0.5 * (ov["series"]["subdist"] + qk["series"]["subdist"])
        er_ov = ov["series"]["effective_rank"]
        below = {lv: apps.first_crossing(t, subdist, lv, above=False) for lv in (0.5, 0.1)}
        out[f"{layers}L"] = {
            "wall_time_s": run.traj.wall_time, "config": run.traj.config,
            "final_loss": float(run.traj.metrics["loss"][-1]),
            "icl_score_initial_final": [float(icl[0]), float(icl[-1])],
            "icl_emergence_window": window,
            "subdist_below_0.5": below[0.5], "subdist_below_0.1": below[0.1],
            "subdist_0.5_before_window_end": None if window is None or below[0.5] is None
            else bool(below[0.5] <= window[1]),
            "ov": {k: v for k, v in ov.items() if k != "series"},
            "qk": {k: v for k, v in qk.items() if k != "series"},
            "ov_effective_rank_increasing_fraction": float(np.mean(np.diff(er_ov) > 0)),
            "_series": {"step": t, "icl_score": icl, "subdist": subdist,
                        "ov_subdist": ov["series"]["subdist"], "qk_subdist": qk["series"]["subdist"],
                        "ov_mer_mode": ov["series"]["mer_mode"], "qk_mer_mode": qk["series"]["mer_mode"],
                        "ov_effective_rank": er_ov}}
    out["across_depths"] = _across_depths(out)
    return out


def _across_depths(per_depth: dict[str, Any]) -> dict[str, Any]:
    """The figures' claims as numbers over the depths that ran: of the ≥ 2-layer models, the
    fraction with an ICL-emergence window, with the mean SubDist below 0.5 before that window ends
    (Fig. 5), and with a QK marginalised-effective-rank dip (any k) before it ends (Fig. 6); whether
    the 1-layer model has a window; the rank correlation of depth with the step at which SubDist
    falls below 0.5 (Fig. 5: deeper models stabilise earlier, i.e. negative)."""
    deep = [s for name, s in per_depth.items() if int(name[:-1]) >= 2]
    windows = [s["icl_emergence_window"] for s in deep]

    def dipped(s: dict[str, Any]) -> bool:
        w = s["icl_emergence_window"]
        return w is not None and any(d is not None and d <= w[1] for d in s["qk"]["mer_mode_first_dips"])

    depth = [int(name[:-1]) for name in per_depth]
    below = [np.inf if s["subdist_below_0.5"] is None else s["subdist_below_0.5"]
             for s in per_depth.values()]
    ranks = [np.argsort(np.argsort(v)) for v in (depth, below)]
    return {"deep_with_icl_window": float(np.mean([w is not None for w in windows])),
            "one_layer_has_icl_window": float(per_depth.get("1L", {}).get("icl_emergence_window")
                                              is not None),
            "deep_subdist_0.5_before_window_end": float(np.mean(
                [bool(s["subdist_0.5_before_window_end"]) for s in deep])),
            "deep_qk_dip_before_window_end": float(np.mean([dipped(s) for s in deep])),
            "depth_vs_subdist_0.5_rank_correlation": float(np.corrcoef(*ranks)[0, 1])}


def _shade(ax, window) -> None:
    if window is not None:
        ax.axvspan(*window, color="grey", alpha=0.2, lw=0)


def _depths(summary: dict[str, Any]) -> dict[str, Any]:
    return {name: s for name, s in summary.items() if name != "across_depths"}


def plot_fig5(runs_: list[Run], summary: dict[str, Any]):
    fig, (ax, bx) = plots.plt.subplots(1, 2, figsize=(12, 4.2))
    for i, (name, s) in enumerate(_depths(summary).items()):
        t = np.asarray(s["_series"]["step"], dtype=np.float64)
        keep = t > 0
        ax.plot(t[keep], np.asarray(s["_series"]["subdist"])[keep], color=f"C{i}", label=name)
        bx.plot(t[keep], np.asarray(s["_series"]["icl_score"])[keep], color=f"C{i}", label=name)
        w = s["icl_emergence_window"]
        if w is not None:
            for a in (ax, bx):
                a.axvspan(*w, color=f"C{i}", alpha=0.12, lw=0)
    ax.set_ylabel("SubDist / ‖M(∞)‖_F, mean of OV and QK heads")
    ax.set_title("(A) subspace distance to the final weights", fontsize=9)
    bx.set_ylabel("ICL score: predictable − unpredictable loss")
    bx.set_title("(B) in-context learning (held-out batch)", fontsize=9)
    for a in (ax, bx):
        a.set_xscale("log")
        a.set_xlabel("training steps")
        a.legend(fontsize=7)
    return fig


def plot_fig6(runs_: list[Run], summary: dict[str, Any]):
    names = list(_depths(summary))
    fig, axes = plots.plt.subplots(2, len(names), figsize=(3.4 * len(names) + 1, 6.4), squeeze=False)
    for j, name in enumerate(names):
        s = summary[name]
        t = np.asarray(s["_series"]["step"], dtype=np.float64)
        keep = t > 0
        for i, kind in enumerate(("ov", "qk")):
            ax = axes[i, j]
            mer = np.asarray(s["_series"][f"{kind}_mer_mode"], dtype=np.float64)
            for k in range(mer.shape[1]):
                ax.plot(t[keep], mer[keep, k], label=f"k={k}")
            _shade(ax, s["icl_emergence_window"])
            ax.set_xscale("log")
            ax.set_title(f"({'AB'[i]}) {kind.upper()}, {name}", fontsize=9)
            ax.set(xlabel="training steps", ylabel="marginalised effective rank")
            if j == 0:
                ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    return fig


CAPTION = ("Attention-only transformers (LayerNorm, 4 heads) trained on periodic random tokens with "
           "a random period (the paper's pretrained attn-only-{1..4}l checkpoints are not "
           "downloadable here); shaded: ICL emergence (10–90 % of the ICL-score fall, ≥ 2 "
           "layers). Measures of spec §8 on the per-head OV and QK matrices against the last "
           "step, averaged over layers and heads.")
FIG5 = Recipe(CAPTION, runs, summarize, plot_fig5)
FIG6 = Recipe(CAPTION + " Marginalised effective rank: Variant B (mode identity), k modes dropped.",
              runs, summarize, plot_fig6)
