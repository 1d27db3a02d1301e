"""Musat et al. 2025: induction heads in the disentangled transformer (full weights, its 19
pseudo-parameters, its three parameters) on the task `induction`, and the standard transformer on
the token task `induction_tokens` (spec musat2025)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastattn.configs.base import (
    Field,
    ModelCard,
    PaperTime,
    Preset,
    TaskCard,
    boolean,
    register_model_card,
    register_task_card,
    set_values,
)
from fastattn.configs.common import DTYPE, INIT_SEED

INDUCTION = register_task_card(TaskCard(
    "induction", "musat2025", "N (x, y) pairs with a positional code; predict the query's y",
    (Field("dim", int, "D (even)", 16),
     Field("context", int, "N pairs", 8),
     Field("data", str, "gaussian | orthonormal (exact flows need orthonormal)", "gaussian",
           choices=("gaussian", "orthonormal")),
     Field("query", str, "uniform | last (q = N, Theorem 2)", "uniform", choices=("uniform", "last")),
     Field("reduction", str, "sum (theory) | mean (App. C/D SGD) over D", "sum",
           choices=("sum", "mean")),
     Field("data_seed", int, "seed of the training data stream", 0)),
    set_values))

INDUCTION_TOKENS = register_task_card(TaskCard(
    "induction_tokens", "musat2025", "token sequences of K item-label pairs (App. E)",
    (Field("vocab", int, "vocabulary size N_T", 32),
     Field("block", int, "number of positions N_P", 32),
     Field("pairs", int, "item-label pairs K per sequence", 8),
     Field("placement", str, "random (offset in the block, App. E) | start", "random",
           choices=("random", "start")),
     Field("data_seed", int, "seed of the training data stream", 0)),
    set_values))

#: §11 (Theorem 2's setting): orthonormal inputs, q = N, summed loss, strict mask, zero init; D = 2N
#: = 16; the exact flow to paper time 200 (θ̇ = −∇_θ L), 2× the 19-parameter flow's loss drop at
#: paper time ≈ 100 (docs/musat2025.md). The integrators' time t is 2 × paper time for the pseudo-
#: parameter models (t = 400) and 2D × paper time for the full weights (t = 6400 at D = 16,
#: DisentangledFullObjective.paper_time), so the full model has its own preset.
THEOREM2_TASK = {"dim": 16, "context": 8, "data": "orthonormal", "query": "last", "reduction": "sum"}
THEOREM2 = Preset("musat2025", "spec musat2025 §11: D=16, N=8, orthonormal, q=N, sum, strict mask, "
                  "zero init, exact flow to t=400 (paper time t/2 = 200)",
                  task=THEOREM2_TASK, model={"mask": "strict", "init_scale": 0.0},
                  train={"method": "flow", "t_end": 400.0})


@dataclass(frozen=True)
class FullWeightsTime:
    """A preset t_end for the full weights: the integrators' time 2D × `paper` (paper time `paper`)."""

    paper: float

    def __call__(self, task_values: Mapping[str, Any]) -> float:
        return 2 * int(task_values["dim"]) * self.paper

    def __str__(self) -> str:
        return f"2D × {self.paper:g} (paper time {self.paper:g})"


THEOREM2_FULL = Preset("musat2025", "spec musat2025 §11: D=16, N=8, orthonormal, q=N, sum, strict "
                       "mask, zero init, exact flow of the full weights to t = 2D × 200 = 6400 "
                       "(paper time t/(2D) = 200)",
                       task=THEOREM2_TASK, model={"mask": "strict", "init_scale": 0.0},
                       train={"method": "flow", "t_end": FullWeightsTime(200.0)})
#: Figs. 4/5 (App. C/D, spec §11.5): Gaussian data, uniform query, mean loss, inclusive mask,
#: SGD lr 1, batch 512, 400 steps (the sampled setup; its exact flow needs --reduction sum)
FIG4 = Preset("musat2025", "spec musat2025 §11.5 (Figs. 4/5): D=16, N=4, Gaussian, uniform query, "
              "mean loss, inclusive mask, SGD lr 1, batch 512, 400 steps",
              when={"data": "gaussian"},
              task={"dim": 16, "context": 4, "data": "gaussian", "query": "uniform",
                    "reduction": "mean"},
              model={"mask": "inclusive", "init_scale": 0.0},
              train={"method": "sgd", "lr": 1.0, "steps": 400, "batch_size": 512})


@dataclass(frozen=True)
class PerDim:
    """A preset value `total` / D: the step of the 3-parameter restriction, λ/D (App. D: the
    full-matrix step λ masked to the directions of α₃, β₂, γ₃)."""

    total: float

    def __call__(self, task_values: Mapping[str, Any]) -> float:
        return self.total / int(task_values["dim"])

    def __str__(self) -> str:
        return f"{self.total:g}/D"


#: Figs. 4/5's setting for the 3-parameter restriction (App. D): lr λ/D
FIG4_THREE_PARAM = Preset("musat2025", "spec musat2025 §11.5 (Figs. 4/5, App. D): Fig. 4's setting "
                          "on α₃, β₂, γ₃ alone, SGD lr λ/D", when=FIG4.when, task=FIG4.task,
                          model=FIG4.model, train={**FIG4.train, "lr": PerDim(FIG4.train["lr"])})
#: App. E's small configuration (D = 64 here, 2048 there): AdamW lr 1e-3, wd 0.01, batch 512, 300 steps
APP_E = Preset("musat2025", "spec musat2025 App. E small: N_T=N_P=32, K=8, D=64 (paper 2048), "
               "AdamW lr 1e-3, weight decay 0.01, batch 512, 300 steps",
               task={"vocab": 32, "block": 32, "pairs": 8},
               model={"d_model": 64},
               train={"method": "adam", "lr": 1e-3, "weight_decay": 0.01, "batch_size": 512,
                      "steps": 300})

MASK = Field("mask", str, "strict (key j < i) | inclusive (j <= i)", "strict",
             choices=("strict", "inclusive"))
DISENTANGLED = (MASK, Field("init_scale", float, "std of the Gaussian init (0: the paper's zero "
                            "init)", 0.0), INIT_SEED, DTYPE)


#: θ̇ = −∇_θ L on the summed loss (App. B.5; theory.musat2025.PAPER_TIME_PER_CORE_TIME); the full
#: weights move the pseudo-parameters θ = EᵀW/D by ∇_θ L / D (DisentangledFullObjective.paper_time)
PSEUDO_TIME = PaperTime(2, "θ̇ = −∇_θ L (App. B.5) on the loss summed over D (a mean loss: ×D)",
                        ("dim_if_mean",))
FULL_TIME = PaperTime(2, "θ̇ = −∇_θ L (App. B.5) of the pseudo-parameters θ = EᵀW/D, which the full "
                      "weights move by ∇_θ L / D; on the summed loss (a mean loss: ×D)",
                      ("dim", "dim_if_mean"))


def _full(c):
    d = c.dim
    return (("W1", (2 * d, 2 * d)), ("W2", (4 * d, 4 * d)), ("W3", (8 * d, d)))


for _card in (
    ModelCard("disentangled", "musat2025", "the disentangled transformer, full W1, W2, W3",
              DISENTANGLED, _full, {"induction": (THEOREM2_FULL, FIG4)}, fixed={"params": "full"},
              time=FULL_TIME),
    ModelCard("gram19", "musat2025", "the disentangled transformer on its 19 pseudo-parameters",
              DISENTANGLED, lambda c: (("theta", (19,)),), {"induction": (THEOREM2,)},
              fixed={"params": "gram19"}, time=PSEUDO_TIME),
    ModelCard("three_param", "musat2025", "the disentangled transformer on α₃, β₂, γ₃",
              DISENTANGLED, lambda c: (("theta", (3,)),), {"induction": (THEOREM2, FIG4_THREE_PARAM)},
              fixed={"params": "three_param"}, time=PSEUDO_TIME),
    ModelCard("standard_transformer", "musat2025", "the two-layer attention-only transformer "
              "(§4, App. E) on tokens",
              (Field("d_model", int, "residual width D (= D_H)", 64),
               Field("attn_scale", boolean, "divide the scores by √D (Eq. 19: no)", False),
               Field("init_std", float, "std of every weight (default 1/√fan_in)"),
               INIT_SEED, Field("dtype", str, "float32 | float64", "float32",
                                choices=("float64", "float32"))),
              None, {"induction_tokens": (APP_E,)},
              from_task={"vocab": "vocab", "block": "block"},
              time=PaperTime(2, "θ̇ = −∇L on the cross-entropy (the paper's convention; App. E "
                             "counts AdamW steps)"),
              seconds_per_step={"induction_tokens": 0.0311}, inputs="tokens"),
):
    register_model_card(_card)
