"""Fig. 20 (App. E): the training loss of the small standard transformer. Every step draws fresh
sequences, so the training loss is a test loss: drawn with the loss on a held-out set. The summary
also times the progress measures' rise in this run (`standard.emergence`), as Fig. 8 does for the
large configuration."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.musat2025 import standard
from fastattn.experiments.recipe import Recipe, Run, RunSpec


def runs(quick: bool) -> list[RunSpec]:
    return [standard.spec(standard.setting("small", quick))]


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    s = standard.setting("small", quick)
    (run,) = runs
    traj = run.traj
    base = s.task().baselines()
    loss, test = np.asarray(traj.loss), np.asarray(traj.test_loss["query"])
    return {"settings": standard.settings_json(s), "baselines": base,
            "initial_loss": float(loss[0]), "final_loss": float(loss[-1]),
            "final_test_loss": float(test[-1]),
            "first_step_below": {name: standard.first_step(traj.step, loss, level, below=True)
                                 for name, level in base.items()}
            | {"0.1": standard.first_step(traj.step, loss, 0.1, below=True)},
            "train_minus_test": {"mean": float(np.mean(loss - test)),
                                 "max_abs": float(np.max(np.abs(loss - test)))},
            "emergence": standard.emergence(s, traj, standard.measures_over_training(s, traj)),
            "curves": {"step": traj.step, "loss": loss, "test_loss": test},
            "wall_time_training": traj.wall_time}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    s, c = summary["settings"], summary["curves"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(c["step"], c["loss"], color="k", lw=1, label="training loss (fresh batch each step)")
    ax.plot(c["step"], c["test_loss"], color="C3", lw=1, ls="--",
            label=f"held-out loss ({s['test_size']} sequences)")
    standard.draw_baselines(ax, summary["baselines"], c["step"][-1])
    ax.set(xlabel="AdamW step", ylabel="cross-entropy at the query (nats)",
           title=f"N_T = N_P = {s['vocab']}, K = {s['pairs']}, D = {s['d_model']}, B = {s['batch']}, "
                 f"lr {s['lr']:g}, wd {s['weight_decay']:g}")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


RECIPE = Recipe("Small configuration of App. E at CPU width (settings in the JSON). Dash-dotted: "
                "cross-entropy of uniform guesses over the vocabulary, over the sequence's 2K tokens and "
                "over its K labels; the induction head reaches 0.", runs, summarize, plot)
