"""Fig. 8 (§4.4, spec §9.5): the progress measures α̃₃, β̃₂, γ̃₃ of the standard transformer over
AdamW training, with the loss: when each measure rises, relative to each other (the paper: γ̃₃,
then β̃₂, then α̃₃) and to the loss drop (the paper: delayed)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.musat2025 import standard
from fastattn.experiments.recipe import Recipe, Run, RunSpec


def runs(quick: bool) -> list[RunSpec]:
    return [standard.spec(standard.setting("large", quick))]


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    s = standard.setting("large", quick)
    (run,) = runs
    traj = run.traj
    m = standard.measures_over_training(s, traj)
    emergence = standard.emergence(s, traj, m)
    paper_order = ["gamma3", "beta2", "alpha3"]
    at_half = emergence["per_entry"]["0.5"]
    return {"settings": standard.settings_json(s), "baselines": s.task().baselines(),
            "emergence": emergence,
            "order_as_paper": {level: float(row["order"] == paper_order and None not in row.values())
                               for level, row in emergence["per_entry"].items()},
            "loss_half_over_alpha_half": None if None in (emergence["loss"]["half"], at_half["alpha3"])
            else emergence["loss"]["half"] / at_half["alpha3"],
            "final": {"loss": float(traj.loss[-1]), "test_loss": float(traj.test_loss["query"][-1])}
            | {k: float(m[k][-1]) for k in standard.MEASURES},
            "peak": {k: float(np.max(m[k])) for k in standard.MEASURES},
            "curves": {"measures": m, "per_entry": standard.per_entry(s, m), "step": traj.step,
                       "loss": traj.loss,
                       "test_loss": traj.test_loss["query"]},
            "wall_time_training": traj.wall_time}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    s, c = summary["settings"], summary["curves"]
    m, e = c["measures"], c["per_entry"]
    at = summary["emergence"]["per_entry"]["0.5"]
    fig, (top, mid, bottom) = plt.subplots(3, 1, figsize=(8, 9.5), sharex=True)
    colors = {"gamma3": "C2", "beta2": "C1", "alpha3": "C0"}
    for k in standard.MEASURES:
        top.plot(m["step"], m[k], color=colors[k], label=standard.LABELS[k])
        mid.plot(e["step"], e[k], color=colors[k], label=k)
        if at[k] is not None:
            for ax in (mid, bottom):
                ax.axvline(at[k], color=colors[k], ls=":", lw=1)
    top.set(ylabel="progress measure", title=f"{s['name']} configuration: N_T = N_P = {s['vocab']}, "
            f"K = {s['pairs']}, D = {s['d_model']}, B = {s['batch']}, AdamW lr {s['lr']:g}")
    top.legend(fontsize=8)
    mid.axhline(0.5, color="0.5", lw=0.8, ls="--")
    mid.set_yscale("symlog", linthresh=0.1)
    mid.set(ylabel="per summed entry", ylim=(-0.05, None))
    mid.legend(fontsize=8, title="dotted: reaches 0.5 per entry", title_fontsize=8)
    bottom.plot(c["step"], c["loss"], color="k", lw=1, label="training loss (fresh batch)")
    bottom.plot(c["step"], c["test_loss"], color="C3", lw=1, ls="--", label="held-out loss")
    standard.draw_baselines(bottom, summary["baselines"], c["step"][-1])
    bottom.set(xlabel="AdamW step", ylabel="cross-entropy (nats)")
    bottom.legend(fontsize=8, loc="lower left")
    return fig


RECIPE = Recipe("α̃₃ = Σ_i (W_K¹p_{i−1})ᵀ W_Q¹p_i, β̃₂ = Σ_t (W_K²O1V1 t)ᵀ W_Q² t, γ̃₃ = tr(W_o O2V2 T) "
                "(Eq. 20-22) at the recorded snapshots; middle: per summed entry (÷ N_P − 1, N_T, N_T). "
                "CPU-sized large configuration of App. E (settings in the JSON). Dash-dotted: "
                "cross-entropy of uniform guesses over the vocabulary, the sequence's tokens and its "
                "labels.", runs, summarize, plot)
