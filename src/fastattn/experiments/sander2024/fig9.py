"""Fig. 9 (App. B): training loss of {linear, softmax} attention × {no MLP, MLP} on commuting
unitary contexts, d = 1 (one complex coordinate: 2×2 rotations in the real representation),
T_max = 10, MLP hidden width 32 (spec §3.7). The paper states only these; here: one layer of the
augmented model (`ARAugmentedLayers`, and `ARTransformer` for the MLP) on e_t = (0, s_t, s_{t−1}),
s_1 = 1/√2 (ℓ(0) = T_max − 1 = 9 for the zero predictor), Adam lr 5e-3 on fresh batches; the
"epoch" axis is Adam steps. The paper's outcome: linear attention reaches ≈ 0, softmax plateaus.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.models import ARAugmentedLayersConfig, ARTransformerConfig
from fastattn.tasks import AutoRegressive
from fastattn.training import TrainConfig

TMAX, LAYERS, MLP_WIDTH, LR = 10, 1, 32, 5e-3
STEPS, BATCH = 2000, 128
QUICK_STEPS, QUICK_BATCH = 60, 64


def task() -> AutoRegressive:
    return AutoRegressive(dim=2, context=TMAX, context_dist="unitary", representation="real",
                          encoding="augmented", s1="unit")


def runs(quick: bool) -> list[RunSpec]:
    steps, batch = (QUICK_STEPS, QUICK_BATCH) if quick else (STEPS, BATCH)
    out = []
    for softmax in (False, True):
        for mlp in (False, True):
            label = ("SM" if softmax else "no SM") + (", MLP" if mlp else ", no MLP")
            model = (ARTransformerConfig(2, MLP_WIDTH, layers=LAYERS, softmax=softmax, init_seed=0,
                                         dtype="float32") if mlp else
                     ARAugmentedLayersConfig(2, 1, layers=LAYERS, softmax=softmax, init_seed=0,
                                             dtype="float32"))
            out.append(RunSpec(label, task(), model,
                               TrainConfig(method="adam", lr=LR, steps=steps, batch_size=batch,
                                           test_size=128 if quick else 1024, eval_seed=1,
                                           n_records=12 if quick else 100),
                               {"softmax": softmax, "mlp": mlp}))
    return out


def summarize(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {"zero_predictor_loss": task().zero_loss(),
                           "steps": runs[0].spec.train.steps, "batch": runs[0].spec.train.batch_size}
    for run in runs:
        t = run.traj
        tail = t.loss[-max(1, len(t.loss) // 10):]
        out[run.spec.label] = {"final_test_loss": float(t.test_loss["in_context"][-1]),
                               "final_train_loss_tail_mean": float(np.mean(tail)),
                               "min_train_loss": float(np.min(t.loss)), **run.spec.group}
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for run in runs:
        t = run.traj
        ax.loglog(t.step + 1, t.loss, label=f"{run.spec.label}: test "
                  f"{summary[run.spec.label]['final_test_loss']:.2g}",
                  ls="-" if not run.spec.group["softmax"] else "--")
    ax.axhline(summary["zero_predictor_loss"], color="0.6", lw=0.8, ls=":", label="zero predictor")
    ax.set_xlabel("Adam step k + 1")
    ax.set_ylabel("training loss Σ_T mean ‖ŝ − s‖²")
    ax.set_title(f"d = 1 (complex), T_max = {TMAX}, L = {LAYERS}, MLP width {MLP_WIDTH}", fontsize=9)
    ax.legend(fontsize=7)
    return fig


RECIPE = Recipe("Training loss of {linear, softmax} × {no MLP, MLP}: softmax without an MLP "
                "plateaus highest (App. B).",
                runs, summarize, plot)
