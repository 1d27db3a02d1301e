"""Fig. 7: the §6 non-augmented model (NONAUG-§6, spec §3.6: positional softmax, shared W_O, LN +
linear read-out, the authors' standard causal mask) on Haar-O(d) sequences, test MSE against the
number of heads H, with and without the duplication e_t = (s_t, s_t). Sampled training with Adam at
lr 1e-2 (spec §4.3), fresh batches each step, s_1 = 1_d/√d as in the code.

CPU sizes (stated in docs/sander2024.md): d = 5, T_max = 20 (the paper: 50), H ∈ {1, 2, 4, 8}
(the code's default: 64), batches of 256 for 1200 steps (the paper: 200 epochs of 16 batches of
1024), test set 2¹⁰. MSE is the authors' convention: the task's loss / (k (T_max − 1) d), i.e. the
mean over positions and coordinates of the squared error on s_{T+1}."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.configs import resolve
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run

#: the non-augmented pair; its preset is the paper's Fig. 7 (`fastattn.configs.sander2024.FIG7`:
#: d = 5, T_max = 50, Haar O(5), k = 2, H = 64, float32, Adam lr 1e-2, batches of 1024, 2¹⁰ test
#: sequences)
PAIR = ("autoregressive", "non_aug")
DIM = resolve(*PAIR).task["dim"]
#: CPU sizes (Figs. 7 and 8): T_max, heads and training length
FULL = {"context": 20, "heads": (1, 2, 4, 8), "train": {"steps": 1200, "batch_size": 256}}
QUICK = {"context": 8, "heads": (1, 4), "train": {"steps": 150, "batch_size": 64, "test_size": 256}}
COPIES = (1, 2)


def cpu_run(label: str, quick: bool, group: dict[str, Any], model: dict[str, Any],
            task: dict[str, Any] | None = None) -> RunSpec:
    """The preset at the CPU sizes (`FULL`, `QUICK`) with the model options `model` and task
    options `task`, s_1 = 1_d/√d (the authors' non_augmented.py; the preset keeps the theory's
    s_1 = 1_d)."""
    size = QUICK if quick else FULL
    return preset_run(label, *PAIR, group=group,
                      task={"context": size["context"], "s1": "unit"} | (task or {}), model=model,
                      train=size["train"] | {"n_records": 12, "n_snapshots": 2})


def runs(quick: bool) -> list[RunSpec]:
    return [cpu_run(f"k{k}_H{h}", quick, {"duplicate": k, "heads": h}, {"heads": h},
                    {"duplicate": k})
            for k in COPIES for h in (QUICK if quick else FULL)["heads"]]


def mse(run: Run) -> np.ndarray:
    """Test MSE over the records (authors' convention: per position and coordinate)."""
    t = run.spec.task
    return run.traj.test_loss["in_context"] / (t.duplicate * (t.context - 1) * t.dim)


def summarize(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": {}}
    for run in runs:
        curve = mse(run)
        out["runs"][run.spec.label] = {**run.spec.group, "test_mse_init": float(curve[0]),
                                       "test_mse_final": float(curve[-1]),
                                       "test_mse_best": float(curve.min()),
                                       "steps": run.traj.step, "test_mse": curve}
    for k in COPIES:
        mine = sorted((r for r in out["runs"].values() if r["duplicate"] == k),
                      key=lambda r: r["heads"])
        out[f"k{k}"] = {"zero_predictor_mse": 1 / DIM, "heads": [r["heads"] for r in mine],
                        "test_mse_final": [r["test_mse_final"] for r in mine],
                        # > 1: more heads help (MSE at the fewest heads over MSE at the most)
                        "gain_fewest_to_most_heads": mine[0]["test_mse_final"] / mine[-1]["test_mse_final"]}
    init = [r["test_mse_init"] for r in out["runs"].values()]
    out["test_mse_init_range"] = [min(init), max(init)]
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for k, style in zip(COPIES, ("o-", "s--"), strict=True):
        s = summary[f"k{k}"]
        name = "e_t = s_t" if k == 1 else "e_t = (s_t, s_t)"
        left.plot(s["heads"], s["test_mse_final"], style, label=name)
    for ax in (left, right):              # ‖s_t‖ = 1: predicting 0 scores 1/d per coordinate
        ax.axhline(1 / DIM, color="k", ls=":", lw=1, label="predict 0 (1/d)")
    left.set_xscale("log", base=2)
    left.set_xticks(summary["k1"]["heads"], [str(h) for h in summary["k1"]["heads"]])
    left.set_xlabel("number of heads H")
    left.set_ylabel("test MSE after training")
    left.legend()
    for run in runs:
        r = summary["runs"][run.spec.label]
        right.plot(np.maximum(r["steps"], 1), r["test_mse"], "-" if r["duplicate"] == 1 else "--",
                   label=f"k = {r['duplicate']}, H = {r['heads']}")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("Adam step")
    right.set_ylabel("test MSE")
    right.legend(fontsize=7, ncol=2)
    return fig


RECIPE = Recipe("Test MSE vs number of heads of the §6 non-augmented model on Haar-O(5) "
                "sequences, with and without token duplication (CPU sizes: docs/sander2024.md).",
                runs, summarize, plot)
