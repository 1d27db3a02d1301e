"""Mainali & Teixeira 2025: the linear transformer on U-aligned Wishart task sets (spec mainali2025;
the paper gives no numbers: the defaults are the spec's canonical configuration C0, §9.0), and the
token transformer of its applications on modular addition and periodic tokens (spec §9.8)."""

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
    int_or_fresh,
    register_model_card,
    register_task_card,
    set_values,
)
from fastattn.configs.common import DTYPE, INIT, INIT_SEED

WISHART_TASKS = register_task_card(TaskCard(
    "wishart_tasks", "mainali2025", "vector regression y = Λ x with U-aligned task matrices Λ",
    (Field("dim", int, "d, the input and output dimension (tokens are 2d)", 4),
     Field("spectrum", str, "eigenvalues s of Σ_x: a name or values 1/0.5/… (default: s = 1)"),
     Field("context", int, "context pairs N", 32),
     Field("tasks", int_or_fresh, "number P of fixed tasks, or 'fresh' (a new task every sequence)",
           64),
     Field("center_tasks", boolean, "subtract the task set's mean λ", False),
     Field("whiten_tasks", boolean, "rescale each mode of the task set to (1/P) Σ λ² = 1", False),
     Field("rotate", boolean, "a Haar-random U from --rotation-seed (else U = I)", True),
     Field("rotation_seed", int, "seed of U", 0),
     Field("task_seed", int, "seed of the fixed task set", 0),
     Field("data_seed", int, "seed of the training data stream", 0)),
    set_values))

#: C0 (spec §9.0): d = 4, s = (2, 1, .5, .25), N = 32, P = 64, η = 0.01, batch 64, aligned init
#: p2 = q1 = 0.01·I, reduced model, 250 epochs of task-centric SGD (the flow: t = 2ηP·epochs)
C0 = Preset("mainali2025", "spec mainali2025 §9.0 C0: d=4, s=(2,1,.5,.25), N=32, P=64, η=0.01, "
            "batch 64, p2=q1=0.01·I, reduced, 250 epochs",
            task={"dim": 4, "spectrum": "2,1,0.5,0.25", "context": 32, "tasks": 64},
            model={"init_scale": 0.01, "reduced": True, "init_mode": "aligned"},
            train={"method": "task_sgd", "lr": 0.01, "steps": 64 * 250, "batch_size": 64},
            methods={"flow": {"t_end": 2 * 0.01 * 64 * 250, "integrator": "rk45"}})


def _linear_transformer(c):
    d = c.dim
    return tuple((name, (d, d)) for name in ("p1", "p2", "q1", "q2"))


register_model_card(ModelCard(
    "linear_transformer", "mainali2025", "f(Z) = Z + W^P (ZZᵀ/N) W^Q Z, blocks p1, p2, q1, q2",
    (INIT, INIT_SEED, DTYPE,
     Field("init_mode", str, "aligned (p2 = q1 = init·I, p1 = q2 = 0) | gaussian (every block "
           "N(0, init²))", "aligned", choices=("aligned", "gaussian")),
     Field("init_noise", float, "std of noise added to every block", 0.0),
     Field("reduced", boolean, "freeze the null blocks p1 = q2 = 0", False)),
    _linear_transformer, {"wishart_tasks": (C0,)},
    time=PaperTime(2, "the paper's ODE dθ/dt = −ηP ∇L (Eqs. 9-10; L with the ½) in epochs of P "
                   "task updates of rate η (docs/conventions.md)", ("lr", "tasks"), "paper epochs"),
    seconds_per_step={"wishart_tasks": 0.000644}))


# ------------------------------------------------------------------ the transformer applications
MODULAR_ADDITION = register_task_card(TaskCard(
    "modular_addition", "mainali2025", "(a + b) mod p from the tokens 'a b =' on a fixed split "
    "(grokking, Nanda et al. 2023)",
    (Field("p", int, "the modulus p (vocabulary p + 1)", 113),
     Field("train_frac", float, "fraction of the p² pairs in the training split", 0.3),
     Field("split_seed", int, "seed of the split", 0),
     Field("data_seed", int, "seed of the minibatches (a batch below the split's size)", 0)),
    set_values))

REPEATED_TOKENS = register_task_card(TaskCard(
    "repeated_tokens", "mainali2025", "periodic random tokens with a random period (induction "
    "heads, next-token loss)",
    (Field("vocab", int, "vocabulary size V", 32),
     Field("length", int, "sequence length (periods in [length/4, 3 length/4])", 32),
     Field("data_seed", int, "seed of the training data stream", 0)),
    set_values))


@dataclass(frozen=True)
class SplitSize:
    """A preset value set by modular addition's split: the pairs of its "train" part
    (round(train_frac·p²): the full batch) or of its held-out "test" part."""

    part: str

    def __call__(self, task_values: Mapping[str, Any]) -> int:
        p = int(task_values["p"])
        n_train = round(float(task_values["train_frac"]) * p**2)     # ModularAddition.n_train
        return n_train if self.part == "train" else p * p - n_train

    def __str__(self) -> str:
        return f"the {self.part} split"


#: spec §9.8 (Nanda et al. 2023): p = 113, 30 % split, 1 layer, d_model 128, 4 heads × 32, ReLU MLP
#: 512, no LayerNorm, learned positions; full-batch AdamW lr 1e-3, wd 1, β = (0.9, 0.98), a short
#: warm-up (10 steps), about 40k epochs; metrics on the whole split
NANDA = Preset("mainali2025", "spec mainali2025 §9.8 (Nanda et al. 2023): p=113, 30 % split, 1 "
               "layer, d_model 128, 4 heads, ReLU MLP 512, no LayerNorm, full-batch AdamW lr 1e-3, "
               "wd 1, β=(0.9, 0.98), 10 warm-up steps, 40 000 epochs",
               task={"p": 113, "train_frac": 0.3},
               model={"d_model": 128, "n_layers": 1, "n_heads": 4, "d_mlp": 512,
                      "layer_norm": False, "pos_embed": "learned"},
               train={"method": "adam", "lr": 1e-3, "weight_decay": 1.0, "betas": (0.9, 0.98),
                      "warmup": 10, "steps": 40_000, "batch_size": SplitSize("train"),
                      "test_size": SplitSize("test"), "n_records": 200, "n_snapshots": 200})
#: the attention-only models of §9.8 (AdamW β = (0.9, 0.99), wd 0.05, LayerNorm, no MLP; the paper's
#: pretrained checkpoints are not downloadable) on the library's substitute task, Figs. 5-6
#: (docs/mainali2025.md): two layers, the smallest depth that forms induction heads
ATTN_ONLY = Preset("mainali2025", "spec mainali2025 §9.8 attention-only models (LayerNorm, no MLP, "
                   "AdamW β=(0.9, 0.99), wd 0.05) on periodic tokens as Figs. 5-6: V=64, length 24, "
                   "2 layers, d_model 64, 4 heads, batch 32, lr 3e-3, 10 warm-up steps, 1500 steps",
                   task={"vocab": 64, "length": 24},
                   model={"d_model": 64, "n_layers": 2, "n_heads": 4, "d_mlp": 0,
                          "layer_norm": True, "pos_embed": "learned"},
                   train={"method": "adam", "lr": 3e-3, "weight_decay": 0.05, "betas": (0.9, 0.99),
                          "warmup": 10, "steps": 1500, "batch_size": 32, "test_size": 256,
                          "n_records": 60, "n_snapshots": 60})

register_model_card(ModelCard(
    "transformer", "mainali2025", "decoder-only token transformer (nanoGPT-style; TransformerLens "
    "weight layout) for the grokking and attention-only applications",
    (Field("d_model", int, "residual width d", 128),
     Field("n_layers", int, "number of blocks", 1),
     Field("n_heads", int, "heads per block", 4),
     Field("d_head", int, "width of a head (default d_model / n_heads)"),
     Field("d_mlp", int, "hidden width of each block's ReLU MLP (0: attention-only)", 0),
     Field("layer_norm", boolean, "pre-norm LayerNorm in every block and before the unembedding",
           False),
     Field("pos_embed", str, "learned | none", "learned", choices=("learned", "none")),
     Field("init_std", float, "std of every weight (default 1/√fan_in)"),
     INIT_SEED, Field("dtype", str, "float32 | float64", "float32", choices=("float64", "float32"))),
    None, {"modular_addition": (NANDA,), "repeated_tokens": (ATTN_ONLY,)},
    from_task={"vocab": "vocab", "vocab_out": "vocab_out", "n_ctx": "n_ctx"},
    time=PaperTime(2, "the applications count optimiser steps (full-batch epochs for modular "
                   "addition): a step of rate η is 2η of t", ("lr",), "paper steps"),
    seconds_per_step={"modular_addition": 0.122, "repeated_tokens": 0.00891},
    inputs="tokens"))
