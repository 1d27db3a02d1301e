"""He et al. 2025: multi-head softmax (and linear) attention on in-context linear regression, the
reduced kernel-regressor model, and multi-task regression (spec he2025 §1-§3)."""

from __future__ import annotations

from fastattn.configs.base import (
    Field,
    ModelCard,
    PaperTime,
    PerDim,
    Preset,
    TaskCard,
    boolean,
    register_model_card,
    register_task_card,
    set_values,
)
from fastattn.configs.common import BASE, DTYPE, HEADS, INIT_SEED


def supports(text: str) -> list[list[int]]:
    """"0,1,2,3;2,3,4,5" → [[0, 1, 2, 3], [2, 3, 4, 5]] (0-based coordinates of each task)."""
    return [[int(v) for v in part.split(",")] for part in text.split(";")]



MULTITASK = register_task_card(TaskCard(
    "multitask_regression", "he2025",
    "N responses y_n = β_{S_n}ᵀ x_{S_n} + noise on fixed coordinate supports S_n (spec §2.3)",
    (Field("dim", int, "covariate dimension d (the supports must fit)", 6),
     Field("supports", supports, "each task's 0-based coordinates 0/1/2/3, ';' between tasks",
           ((0, 1, 2, 3), (2, 3, 4, 5))),
     Field("context", int, "context length L", 40),
     Field("noise", float, "response-noise variance σ²", 0.1),
     Field("shared_beta", boolean, "one β for all tasks (the text; false: the code)", True),
     Field("beta_var", float, "prior variance of each β coordinate (default 1/d)"),
     Field("query_noise", boolean, "query responses carry noise too (the text)", True),
     Field("data_seed", int, "seed of the training data stream", 0)),
    set_values))

#: spec §2.1/§3.2: d = 5, L = 40, x ~ N(0, I), β ~ N(0, I/d), σ² = 0.1; Adam lr 1e-3, batch 256,
#: 5·10⁵ steps, PyTorch's default init (float32, as the authors' code); H = 2 (the text's model)
HE = Preset("he2025", "spec he2025 §2.1, §3.2: d=5, L=40, x~N(0,I), β~N(0,I/d), σ²=0.1, H=2, "
            "Adam lr 1e-3, batch 256, 5e5 steps, PyTorch default init",
            task={"dim": 5, "context": 40, "spectrum": "identity", "rotate": False,
                  "w_var": PerDim(1.0), "noise": 0.1},
            model={"heads": 2, "dtype": "float32"},
            train={"method": "adam", "lr": 1e-3, "steps": 500_000, "batch_size": 256})
#: the reduced (ω, μ) model of spec §1.5 (E12): 2 heads, ω, μ ~ N(0, 0.1²), float64
HE_KERNEL = Preset("he2025", "spec he2025 §1.5 (E12): the reduced model, init 0.1",
                   task=HE.task, model={"heads": 2, "init_scale": 0.1}, train=HE.train)
#: the multi-task setting (spec §2.3, E11): d = 6, S = {1..4}, {3..6}, N = 2 outputs
HE_MULTITASK = Preset("he2025", "spec he2025 §2.3 (E11): d=6, supports {1..4}, {3..6}, σ²=0.1, "
                      "H=2, Adam lr 1e-3, batch 256, 5e5 steps",
                      task={"dim": 6, "context": 40, "noise": 0.1},
                      model={"heads": 2, "dtype": "float32"}, train=HE.train)

INIT_MODE = Field("init_mode", str, "torch (nn.Linear's default, the paper's) | small_id | "
                  "small_id_qk | oppo_small_id (the authors' code)", "torch",
                  choices=("torch", "small_id", "small_id_qk", "oppo_small_id"))
ACTIVATION = Field("activation", str, "normalised activation: exp (softmax) | linear | square | tanh",
                   "exp", choices=("exp", "linear", "square", "tanh"))
ACTIVATION_C = Field("activation_c", float, "the constant C of the linear and square activations", 1.0)
#: init_scale is unused by the nn.Linear-initialised families
TORCH_INIT = (HEADS, INIT_SEED, DTYPE)


def _multihead(c):
    d, h = c.dim, c.heads
    square = (h, d + 1, d + 1)
    return (("wq", square), ("wk", square), ("wv", square), ("wo", (h, d + 1)))


def _multioutput(c):             # tokens of width d + N, N outputs
    d, h, n = c.dim, c.heads, c.outputs
    square = (h, d + n, d + n)
    return (("wq", square), ("wk", square), ("wv", square), ("wo", (h, n, d + n)))


def _multilayer(c):              # S weight sets: 1 if tied, else one per layer
    d, h, s = c.dim, c.heads, 1 if c.tied else c.layers
    square = (s, h, d + 1, d + 1)
    return (("wq", square), ("wk", square), ("wv", square), ("wo", square), ("readout", (1, d + 1)))


def _kernel(c):                  # ω per head: a scalar, a diagonal [d] or a full [d, d]
    d, h = c.dim, c.heads
    omega = {"scalar": (h,), "diagonal": (h, d), "full": (h, d, d)}[c.omega_form]
    return (("omega", omega), ("mu", (h,)))


#: the paper's GD θ ← θ − η∇L on L = E(y_q − ŷ_q)² (no ½; §3.4 prints its updates on L̃ with 2η):
#: paper time η × steps, θ̇ = −∇L; the authors' code plots step × lr on L̃/2, the record's t
TIME = PaperTime(2, "the paper's GD θ ← θ − η∇L on L = E(y_q − ŷ_q)² (no ½): time η × steps")


for _card in (
    ModelCard("multihead_softmax", "he2025", "one-layer H-head softmax attention (spec §1.2-1.4)",
              (*TORCH_INIT, INIT_MODE, ACTIVATION, ACTIVATION_C), _multihead,
              {"linear_regression": (HE,)}, time=TIME,
              seconds_per_step={"linear_regression": 7.91e-05}),
    ModelCard("multihead_linear", "he2025", "H-head linear attention LinTF (spec §1.8)",
              (*TORCH_INIT, INIT_MODE,
               Field("norm_context", int, "LinTF's hard-coded 1/L (default: the actual context "
                     "length)")), _multihead, {"linear_regression": (HE,)}, time=TIME,
              seconds_per_step={"linear_regression": 0.00389}),
    ModelCard("multioutput_softmax", "he2025", "H-head softmax attention on [x; y], y ∈ R^N "
              "(spec §1.9); N = the task's number of supports",
              (*TORCH_INIT, INIT_MODE, ACTIVATION, ACTIVATION_C), _multioutput,
              {"multitask_regression": (HE_MULTITASK,)}, from_task={"outputs": "outputs"}, time=TIME,
              seconds_per_step={"multitask_regression": 0.00406}),
    ModelCard("multilayer_softmax", "he2025", "a stack of softmax attention layers (the authors' "
              "multi-layer variant, spec §1.3)",
              (*TORCH_INIT, Field("layers", int, "number of attention layers", 2),
               Field("tied", boolean, "one set of layer weights applied --layers times", False)),
              _multilayer, {"linear_regression": (HE,)}, time=TIME,
              seconds_per_step={"linear_regression": 0.484}),
    ModelCard("kernel_regressors", "he2025", "the reduced model ŷ = Σ_h μ_h Σ_ℓ y_ℓ σ(x_ℓᵀ Ω_h x_q) "
              "(spec §1.5)", (*BASE, Field("omega_form", str, "scalar | diagonal | full Ω_h",
                                           "scalar", choices=("scalar", "diagonal", "full")),
                              ACTIVATION, ACTIVATION_C), _kernel,
              {"linear_regression": (HE_KERNEL,)}, time=TIME,
              seconds_per_step={"linear_regression": 0.00364}),
):
    register_model_card(_card)
