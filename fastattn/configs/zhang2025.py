"""Zhang et al. 2025: linear and softmax attention (merged, separate) and the cubic MLP on in-context
linear regression; the task `linear_regression` (shared with He et al. 2025)."""

from __future__ import annotations

from fastattn.configs.base import (
    Field,
    ModelCard,
    PaperTime,
    Preset,
    TaskCard,
    boolean,
    context_value,
    floats,
    register_model_card,
    register_task_card,
)
from fastattn.configs.common import BASE


def _spectrum(text: str) -> str:
    """A spectrum name (fastattn.tasks.spectra) or comma-separated eigenvalues."""
    return text


LINEAR_REGRESSION = register_task_card(TaskCard(
    "linear_regression", "zhang2025, he2025",
    "y = wᵀx + noise: x ~ N(0, Λ), w ~ N(μ_w, Σ_w); the query's label is predicted",
    (Field("dim", int, "token dimension D", 4),
     Field("context", context_value, "context length N; '1..31' draws N uniformly (next-token loss, "
           "Eq. 23); '8/16' a list", 31),
     Field("spectrum", _spectrum, "eigenvalues of Λ: a name (linear, inverse, identity, power:A, "
           "repeated:K) or values 0.4/0.3/…; unset: Λ = I"),
     Field("rotate", boolean, "random eigenvectors for Λ, drawn from --rotation-seed", False),
     Field("rotation_seed", int, "seed of Λ's random eigenbasis", 0),
     Field("w_mean", floats, "task-prior mean μ_w, one value per coordinate, 1/0/… (default 0)"),
     Field("w_var", float, "task prior Σ_w = VAR·I (He et al.: 1/D; default Σ_w = I)"),
     Field("noise", float, "label-noise variance σ²", 0.0),
     Field("cov_rho", float, "Λ_ij = ρ^|i−j| (AR(1) covariance) instead of --spectrum"),
     Field("fixed_task_fraction", float, "fraction of sequences with one fixed task vector "
           "(in-weight learning)", 0.0),
     Field("fixed_task_seed", int, "seed of the fixed task vector", 0),
     Field("data_seed", int, "seed of the training data stream", 0)),
    "fastattn.tasks.linear_regression:option_fields"))

#: Fig. 3's setting (the paper's text: App. C.2 init, 1/N): D = 4, λ ∝ (4, 3, 2, 1) in a random
#: eigenbasis, N = 31, H = 5, w_init = 1e-2, the exact population flow to t = 1e5 (every drop)
ZHANG = Preset("zhang2025", "docs/zhang2025.md, Fig. 3: D=4, linear spectrum rotated, N=31, H=5, "
               "App. C.2 init 1e-2, exact gradient flow",
               task={"dim": 4, "context": 31, "spectrum": "linear", "rotate": True},
               model={"heads": 5, "init_scale": 1e-2},
               train={"method": "flow", "t_end": 1e5})
ZHANG_MERGED = Preset("zhang2025", "as Fig. 3 with the merged/MLP init 1e-3 of Figs. 1, 7",
                      task=ZHANG.task, model={"heads": 5, "init_scale": 1e-3}, train=ZHANG.train)
#: Fig. 5 (softmax: no exact objective): online SGD lr 0.5, batch 256, init 0.1, 3000 steps
SOFTMAX = Preset("zhang2025", "docs/zhang2025.md, Fig. 5: online SGD lr 0.5, batch 256, init 0.1, "
                 "3000 steps, held-out ICL test set of 2000", task=ZHANG.task,
                 model={"heads": 4, "init_scale": 0.1},
                 train={"method": "sgd", "lr": 0.5, "steps": 3000, "batch_size": 256,
                        "test_size": 2000})
#: Fig. 14 (ICL vs IWL): H = 8, Λ = I/4, full-batch GD on 1000 sequences, lr 0.2, 600 steps
FULL = Preset("zhang2025", "docs/zhang2025.md, Fig. 14: H=8, Λ=I/4, full-batch GD on 1000 "
              "sequences, lr 0.2, 600 steps", task={"dim": 4, "context": 31,
                                                    "spectrum": "0.25,0.25,0.25,0.25"},
              model={"heads": 8, "init_scale": 1e-2},
              train={"method": "sgd", "lr": 0.2, "steps": 600, "dataset_size": 1000})

#: the init scheme of Zhang et al.'s families (their configs' `init_scheme`)
INIT_SCHEME = Field("init_scheme", str, "paper (Zhang App. C.2) | code (the public code's)", "paper",
                    choices=("paper", "code"))
#: the fields of Zhang et al.'s families: `BaseModelConfig`'s and the init scheme
ZHANG_BASE = (*BASE, INIT_SCHEME)
RANK = Field("rank", int, "key/query rank R", 1)
SCALE = Field("scale", float, "score scale 1/ρ", 1.0)


def _merged(c):
    d, h = c.dim, c.heads
    return (("v", (h,)), ("U", (h, d, d)))


def _separate(c):
    d, h, r = c.dim, c.heads, c.rank
    return (("v", (h,)), ("K", (h, r, d)), ("Q", (h, r, d)))


def _merged_full(c):
    d, h = c.dim, c.heads
    return (("value", (h, d + 1, d + 1)), ("kq", (h, d + 1, d + 1)))


def _cubic(c):
    d, h = c.dim, c.heads
    return (("w2", (h,)), ("W1", (h, d * d)))


TIME = PaperTime(1, "τ dθ/dt = −½ ∂L/∂θ, τ = 1 (Eq. 5), on L = E(y_q − ŷ_q)²")


for _card in (
    ModelCard("merged", "zhang2025", "linear ATTN_M with zero blocks (Eq. 6 (M))", ZHANG_BASE, _merged,
              {"linear_regression": (ZHANG_MERGED,)}, time=TIME),
    ModelCard("merged_full", "zhang2025", "linear ATTN_M keeping every block of W^V, W^KQ (Eq. 91)",
              ZHANG_BASE, _merged_full, {"linear_regression": (FULL,)}, time=TIME,
              seconds_per_step={"linear_regression": 0.0022}),
    ModelCard("separate", "zhang2025", "linear ATTN_S with rank-R keys/queries (Eq. 12)",
              (*ZHANG_BASE, RANK), _separate, {"linear_regression": (ZHANG,)}, time=TIME),
    ModelCard("cubic_mlp", "zhang2025", "the two-layer linear MLP on z (Eq. 7); heads = hidden width",
              ZHANG_BASE, _cubic, {"linear_regression": (ZHANG_MERGED,)}, time=TIME),
    ModelCard("softmax_merged", "zhang2025", "softmax ATTN_M", (*ZHANG_BASE, SCALE), _merged,
              {"linear_regression": (SOFTMAX,)}, time=TIME,
              seconds_per_step={"linear_regression": 0.00339}),
    ModelCard("softmax_separate", "zhang2025", "softmax ATTN_S", (*ZHANG_BASE, RANK, SCALE), _separate,
              {"linear_regression": (SOFTMAX,)}, time=TIME,
              seconds_per_step={"linear_regression": 0.00346}),
):
    register_model_card(_card)
