"""Fig. 9 (App. B): training loss of {linear, softmax} attention × {no MLP, MLP} on "the unitary
context matrix setup of section 5": model (6) with its positional matrix P on commuting unitary
contexts, d = 1 (one complex coordinate: 2×2 rotations in the real representation, so that a
softmax of real scores is defined), T_max = 10, MLP hidden width 32 (spec §3.7). The paper states
only these; here (`Eq6Attention`, H = 2 real heads, the real form of one complex head: the
complex score ⟨e_t|e_{T−1}⟩ has a real and an imaginary part):

    linear:  ŝ = Σ_h Σ_{t≤T} P_{T−1,t} (e_tᵀ A^h e_{T−1}) B^h e_t                      (Eq. 6)
    softmax: ŝ = Σ_h Σ_{t≤T} P_{T−1,t} softmax_{t≤T}(e_tᵀ A^h e_{T−1}) B^h e_t
    MLP:     ŝ ← ŝ + W₂ ReLU(W₁ ŝ + b₁) + b₂  (hidden 32, position-wise, residual)

on e_t = s_t, s_1 = 1_d/√d (‖s_1‖ = 1: ℓ(0) = T_max − 1 = 9 for the zero predictor);
A, B, P ~ 0.1·N(0, 1) (the authors' Fig. 3 init), MLP nn.Linear's U(±1/√fan_in); Adam lr 5e-3 on
fresh batches; the "epoch" axis is Adam steps. Linear attention has an exact zero-loss solution
here (Prop. 3 in real form: heads (I, I) and (J, J), P = e_T); the paper's outcome: linear
attention reaches ≈ 0, softmax plateaus.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.models.autoregressive import lookahead_mask
from fastattn.tasks import AutoRegressive

TMAX, HEADS, MLP_WIDTH, LR, INIT_SCALE = 10, 2, 32, 5e-3, 0.1
STEPS, BATCH = 2000, 128
QUICK_STEPS, QUICK_BATCH = 300, 64
CONFIGS = ((False, False), (False, True), (True, False), (True, True))   # (softmax, mlp)


def task() -> AutoRegressive:
    return AutoRegressive(dim=2, context=TMAX, context_dist="unitary", representation="real", s1="unit")


class Eq6Attention(nn.Module):
    """Model (6) with full real A^h, B^h `[H, d, d]` and P `[T_max, T_max]`, its scores linear or
    softmaxed over the keys each query reads, optionally followed by a residual MLP (module
    docstring)."""

    def __init__(self, dim: int, heads: int, tmax: int, *, softmax: bool, mlp_width: int = 0,
                 seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)

        def normal(*shape: int) -> nn.Parameter:
            return nn.Parameter(INIT_SCALE * torch.randn(*shape, generator=g, dtype=torch.float64))

        def uniform(fan_in: int, *shape: int) -> nn.Parameter:
            return nn.Parameter((torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1)
                                / math.sqrt(fan_in))

        self.A, self.B, self.P = normal(heads, dim, dim), normal(heads, dim, dim), normal(tmax, tmax)
        self.softmax, self.mlp_width = softmax, mlp_width
        self.register_buffer("mask", lookahead_mask(tmax))
        if mlp_width:
            self.W1, self.b1 = uniform(dim, mlp_width, dim), uniform(dim, mlp_width)
            self.W2, self.b2 = uniform(mlp_width, dim, mlp_width), uniform(mlp_width, dim)

    def predict(self, tokens: torch.Tensor) -> torch.Tensor:
        """`[N, T_max−1, d]` predictions of s_{T+1}, T = 2..T_max, from tokens `[N, T_max, d]`."""
        scores = torch.einsum("nte,hef,nqf->nhqt", tokens, self.A, tokens[:, :-1])
        if self.softmax:
            scores = torch.softmax(scores.masked_fill(~self.mask, -math.inf), dim=-1)
        weights = scores * (self.P[:-1] * self.mask)
        out = torch.einsum("nhqt,hfe,nte->nqf", weights, self.B, tokens)
        if self.mlp_width:
            out = out + torch.relu(out @ self.W1.T + self.b1) @ self.W2.T + self.b2
        return out


def train(softmax: bool, mlp: bool, steps: int, batch: int) -> list[float]:
    """The per-step training loss of one configuration (Adam on batch k of the task's stream)."""
    model = Eq6Attention(task().dim, HEADS, TMAX, softmax=softmax, mlp_width=MLP_WIDTH if mlp else 0)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    losses = []
    for step in range(steps):
        loss = task().loss(model, task().sample(batch, step))
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return losses


def runs(quick: bool) -> list[RunSpec]:
    return []


def label(softmax: bool, mlp: bool) -> str:
    return ("SM" if softmax else "no SM") + (", MLP" if mlp else ", no MLP")


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    steps, batch = (QUICK_STEPS, QUICK_BATCH) if quick else (STEPS, BATCH)
    torch.set_num_threads(1)
    out: dict[str, Any] = {"zero_predictor_loss": task().zero_loss(), "steps": steps, "batch": batch,
                           "heads": HEADS, "curves": {}}
    for softmax, mlp in CONFIGS:
        losses = train(softmax, mlp, steps, batch)
        tail = losses[-max(1, steps // 10):]
        out[label(softmax, mlp)] = {"final_train_loss_tail_mean": float(np.mean(tail)),
                                    "min_train_loss": float(np.min(losses)), "softmax": softmax, "mlp": mlp}
        out["curves"][label(softmax, mlp)] = losses
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
