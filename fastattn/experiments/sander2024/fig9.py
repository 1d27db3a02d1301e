"""Fig. 9 (App. B): training loss of {linear, softmax} attention × {no MLP, MLP} on "the unitary
context matrix setup of section 5": model (6) with its positional matrix P on commuting unitary
contexts, d = 1 (one complex coordinate: 2×2 rotations in the real representation, so that a
softmax of real scores is defined), T_max = 10, MLP hidden width 32 (spec §3.7). The paper states
only these; here (the family `eq6`, `fastattn.models.autoregressive.Eq6`, H = 2 real heads, the
real form of one complex head: the complex score ⟨e_t|e_{T−1}⟩ has a real and an imaginary part):

    linear:  ŝ = Σ_h Σ_{t≤T} P_{T−1,t} (e_tᵀ A^h e_{T−1}) B^h e_t                      (Eq. 6)
    softmax: ŝ = Σ_h Σ_{t≤T} P_{T−1,t} softmax_{t≤T}(e_tᵀ A^h e_{T−1}) B^h e_t
    MLP:     ŝ ← ŝ + W₂ ReLU(W₁ ŝ + b₁) + b₂  (hidden 32, position-wise, residual)

on e_t = s_t, s_1 = 1_d/√d (‖s_1‖ = 1: ℓ(0) = T_max − 1 = 9 for the zero predictor);
A, B, P ~ 0.1·N(0, 1) (the authors' Fig. 3 init), MLP nn.Linear's U(±1/√fan_in); Adam lr 5e-3 on
fresh batches; the "epoch" axis is Adam steps. Linear attention has an exact zero-loss solution
here (Prop. 3 in real form: heads (I, I) and (J, J), P = e_T); the paper's outcome: linear
attention reaches ≈ 0, softmax plateaus. The four runs are `RunSpec`s of kind "sampled"
(`reproduce` trains them with `train()`, recording the loss at every step).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.configs import resolve
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.models import Eq6Config
from fastattn.tasks import AutoRegressive
from fastattn.training.build import build_task

#: model (6)'s pair; its preset is the figure's setting (`fastattn.configs.sander2024.FIG9`: d = 2
#: real, T_max = 10, unitary, s_1 = 1_d/√d, H = 2, init 0.1, Adam lr 5e-3, 2000 steps of 128)
PAIR = ("autoregressive", "eq6")
_PRESET = resolve(*PAIR)
TMAX, MLP_WIDTH = _PRESET.task["context"], 32
QUICK = {"steps": 300, "batch_size": 64}
CONFIGS = ((False, False), (False, True), (True, False), (True, True))   # (softmax, mlp)


def task() -> AutoRegressive:
    return build_task(_PRESET.task)


def spec(softmax: bool, mlp: bool, quick: bool = False) -> RunSpec:
    """The run of one configuration: the loss recorded at every step (10 × steps log-spaced
    records cover every integer step)."""
    train = QUICK if quick else {}
    steps = train.get("steps", _PRESET.train["steps"])
    return preset_run(("softmax" if softmax else "linear") + ("_mlp" if mlp else ""), *PAIR,
                      group={"softmax": softmax, "mlp": mlp},
                      model={"softmax": softmax} | ({"mlp_width": MLP_WIDTH} if mlp else {}),
                      train=train | {"n_records": 10 * steps, "n_snapshots": 2})


def model_config(softmax: bool, mlp: bool) -> Eq6Config:
    return spec(softmax, mlp).model


def label(softmax: bool, mlp: bool) -> str:
    return ("SM" if softmax else "no SM") + (", MLP" if mlp else ", no MLP")


def runs(quick: bool) -> list[RunSpec]:
    """The four configurations, Adam on batch k of the task's stream at step k."""
    return [spec(softmax, mlp, quick) for softmax, mlp in CONFIGS]


def summarize(runs: list[Run]) -> dict[str, Any]:
    cfg = runs[0].spec.train
    out: dict[str, Any] = {"zero_predictor_loss": task().zero_loss(), "steps": cfg.steps,
                           "batch": cfg.batch_size, "heads": runs[0].spec.model.heads, "curves": {}}
    for run in runs:
        softmax, mlp = run.spec.group["softmax"], run.spec.group["mlp"]
        # the loss of batch k before step k, k = 0..steps−1 (the record's last point is the
        # final state's)
        losses = run.traj.loss[run.traj.step < cfg.steps]
        if len(losses) != cfg.steps:
            raise ValueError(f"run {run.spec.label}: {len(losses)} of {cfg.steps} steps recorded")
        tail = losses[-max(1, cfg.steps // 10):]
        out[label(softmax, mlp)] = {"final_train_loss_tail_mean": float(np.mean(tail)),
                                    "min_train_loss": float(np.min(losses)), "softmax": softmax,
                                    "mlp": mlp}
        out["curves"][label(softmax, mlp)] = losses.tolist()
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for softmax, mlp in CONFIGS:
        name = label(softmax, mlp)
        losses = summary["curves"][name]
        ax.loglog(np.arange(1, len(losses) + 1), losses, ls="--" if softmax else "-",
                  label=f"{name}: last-tenth mean {summary[name]['final_train_loss_tail_mean']:.2g}")
    ax.axhline(summary["zero_predictor_loss"], color="0.6", lw=0.8, ls=":", label="zero predictor")
    ax.set_xlabel("Adam step k + 1")
    ax.set_ylabel("training loss Σ_T mean ‖ŝ − s‖²")
    ax.set_title(f"model (6), d = 1 (complex), T_max = {TMAX}, MLP width {MLP_WIDTH}, "
                 f"{summary['steps']} steps of batch {summary['batch']}", fontsize=8)
    ax.legend(fontsize=7)
    return fig


RECIPE = Recipe("Training loss of model (6) with P on commuting unitary contexts, {linear, softmax} × "
                "{no MLP, MLP}: linear attention reaches ≈ 0, softmax plateaus (App. B).",
                runs, summarize, plot)
