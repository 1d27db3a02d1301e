"""Fig. 5: the L-layer augmented linear transformer (AUG-L, spec §3.3) against L steps of GD on the
inner loss (Eq. 5) with the best constant step, L = 1..6 (spec §6; d = 5, T_max = 50, Haar O(5)
contexts, s_1 = 1_d/√d, augmented tokens with s_0 = 0, Adam lr 5e-3).

Sizes. The paper trains 2000 epochs over 2¹⁴ fixed sequences in batches of 1024 (32 000 Adam
steps); the shared CPU allows far less, so the default (`size=cpu`) trains 300 online Adam steps of
64 fresh sequences; `--option size=paper` trains the paper's 32 000 steps of 1024 (fresh sequences
instead of epochs over a fixed set); `--quick`: L = 1, 2 at T_max = 10. The test set is 2¹⁰
held-out sequences, as the paper's; the GD baseline (`theory.inner_gd_mse`) runs on the same test
sequences, its step chosen on a grid of 40 η in [1e-3, 1] separately for each L and each score.
Scores are per-coordinate MSEs at the positions the library's loss reads (T = 2..T_max) and at the
last one (T = T_max); the spec's baseline table (T = 1..T_max) is checked in `gd_spec_check`.
Fig. 10 (`fig10.py`) is the same recipe with the App. B transformer (softmax and an MLP per layer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from fastattn.configs import resolve
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.models import build_model
from fastattn.theory import sander2024 as theory

#: the AUG-L pair; its preset is the paper's Fig. 5 (`fastattn.configs.sander2024.FIG5`: d = 5,
#: T_max = 50, Haar O(5), augmented tokens, s_1 = 1_d/√d, float32, Adam lr 5e-3, 32 000 steps of
#: 1024, 2¹⁰ test sequences)
PAIR = ("autoregressive", "aug_layers")
#: the preset's d and T_max: the full-length baseline table and Fig. 10's MLP width read them
D, TMAX = (resolve(*PAIR).task[k] for k in ("dim", "context"))
#: training sizes by the `size` option: "cpu" (the default, minutes on a shared CPU) or "paper"
#: (the preset's 2000 epochs of 2¹⁴ sequences in steps of 1024 = 32 000 Adam steps, drawn online)
SIZES = {"cpu": {"steps": 300, "batch_size": 64}, "paper": {}}
QUICK = {"layers": (1, 2), "context": 10, "train": {"steps": 30, "batch_size": 64, "test_size": 128}}
GD_LRS = np.geomspace(1e-3, 1, 40)


def specs(quick: bool, model: str, model_given: Callable[[int], dict[str, Any]],
          size: str = "cpu") -> list[RunSpec]:
    """One run per depth L of the (autoregressive, `model`) preset with the model options
    `model_given(L)`; `size` picks the training length."""
    layers = QUICK["layers"] if quick else range(1, 7)
    task = {"context": QUICK["context"]} if quick else {}
    train = (QUICK["train"] if quick else SIZES[size]) | {"n_records": 12 if quick else 25}
    return [preset_run(f"L{L}", PAIR[0], model, group={"layers": L}, task=task,
                       model=model_given(L), train=train) for L in layers]


def runs(quick: bool, size: str = "cpu") -> list[RunSpec]:
    return specs(quick, PAIR[1], lambda L: {"layers": L}, size)


def model_mse(model: torch.nn.Module, tokens: torch.Tensor, targets: torch.Tensor) -> np.ndarray:
    """Per-coordinate MSE of the predictions at T = 2..T_max `[T_max − 1]`, over the test set."""
    with torch.no_grad():
        pred = model.predict(tokens.to(model.fc_w.dtype)).double()
    return ((pred - targets) ** 2).mean(dim=(0, 2)).numpy()


def summarize(runs: list[Run]) -> dict[str, Any]:
    spec0 = runs[0].spec
    test = spec0.task.test_sets(spec0.train.test_size, spec0.train.eval_seed)["in_context"]
    layers = [r.spec.group["layers"] for r in runs]
    gd = theory.inner_gd_mse(test.states.numpy(), layers, GD_LRS)[:, :, 1:]   # T = 2..T_max
    out: dict[str, Any] = {"layers": layers, "context": spec0.task.context,
                           "train_sequences": spec0.train.steps * spec0.train.batch_size,
                           "steps": spec0.train.steps, "batch": spec0.train.batch_size,
                           "test_sequences": spec0.train.test_size}
    for key, per_t in (("all", lambda m: m.mean(-1)), ("last", lambda m: m[..., -1])):
        model, init, gd_best, gd_lr = [], [], [], []
        for i, run in enumerate(runs):
            model.append(float(per_t(model_mse(run.model, test.tokens, test.targets))))
            init.append(float(per_t(model_mse(build_model(run.spec.model), test.tokens, test.targets))))
            scores = per_t(gd[i])
            gd_best.append(float(scores.min()))
            gd_lr.append(float(GD_LRS[scores.argmin()]))
        out[key] = {"model": model, "model_at_init": init, "gd": gd_best, "gd_lr": gd_lr,
                    "model_over_gd": list(np.divide(model, gd_best))}
    out["final_train_loss"] = [r.traj.final_loss for r in runs]
    if spec0.task.context == TMAX:               # the spec's baseline table (T = 1..T_max)
        full = theory.inner_gd_mse(test.states.numpy(), [1, 6], GD_LRS)
        out["gd_spec_check"] = {"L1_all_T1..50": float(full[0].mean(-1).min()),
                                "L6_last": float(full[1][:, -1].min()),
                                "spec": {"L1_all_T1..50": 0.087, "L6_last": 4.9e-3}}
    return out


def plot(runs: list[Run], summary: dict[str, Any], name: str = "AUG-L (linear attention)"):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    L = summary["layers"]
    for ax, key, title in ((axes[0], "all", f"mean over T = 2..{summary['context']}"),
                           (axes[1], "last", f"last position T = {summary['context']}")):
        s = summary[key]
        ax.semilogy(L, s["model"], "o-", label=f"{name}, trained")
        ax.semilogy(L, s["model_at_init"], "x:", color="0.5", label="same model at init")
        ax.semilogy(L, s["gd"], "s--", color="k", label="L steps of inner GD, best η")
        ax.set_xticks(L)
        ax.set_xlabel("depth L (layers / GD steps)")
        ax.set_ylabel("test MSE per coordinate")
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.text(0.5, 0.005, f"{summary['steps']} Adam steps × {summary['batch']} fresh sequences "
             f"({summary['train_sequences']} in all), {summary['test_sequences']} test sequences",
             ha="center", fontsize=7)
    return fig


RECIPE = Recipe("AUG-L vs L steps of GD on the inner loss: GD keeps improving with L.",
                runs, summarize, plot)
