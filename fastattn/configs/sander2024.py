"""Sander et al. 2024: in-context autoregressive learning; the task `autoregressive` and the DIAG,
PE-only, AUG-1, AUG-L, full-transformer, non-augmented and model-(6) models (spec sander2024)."""

from __future__ import annotations

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
from fastattn.configs.common import BASE, DTYPE, HEADS, INIT, INIT_SEED

AUTOREGRESSIVE = register_task_card(TaskCard(
    "autoregressive", "sander2024", "s_{t+1} = W s_t with W drawn per sequence (spec §2)",
    (Field("dim", int, "dimension d of s_t", 10),
     Field("context", int, "T_max, the longest context (the loss sums T = 2..T_max)", 20),
     Field("context_dist", str, "unitary | orthogonal | haar | positional (§2.2)", "unitary",
           choices=("unitary", "orthogonal", "haar", "positional")),
     Field("representation", str, "complex | real", "complex", choices=("complex", "real")),
     Field("encoding", str, "plain | augmented (e_t = (0, s_t, s_{t-1}))", "plain",
           choices=("plain", "augmented")),
     Field("duplicate", int, "copies of s_t in a plain token", 1),
     Field("s0", str, "augmented tokens' s_0: zero (code) | backward (W^-1 s_1)", "zero",
           choices=("zero", "backward")),
     Field("s1", str, "start s_1: ones (theory) | unit (the §6 code)", "ones", choices=("ones", "unit")),
     Field("mu", float, "μ of the positional distribution 𝒲(μ)", 1.0),
     Field("data_seed", int, "seed of the training data stream", 0)),
    set_values))

#: Fig. 3 (§3.10 init, §4.3 rates): d = 10, T_max = 20, A, B, P ~ 0.1·N(0, 1); unitary contexts with
#: H = 10: exact-loss GD lr 1e-2, 100 steps; orthogonal contexts with H = 8: lr 1e-3, 10⁵ steps
FIG3_UNITARY = Preset("sander2024", "spec sander2024 Fig. 3 unitary, §3.10 init, §4.3: d=10, "
                      "T_max=20, H=10, init 0.1, exact GD lr 1e-2, 100 steps",
                      task={"dim": 10, "context": 20, "context_dist": "unitary"},
                      model={"heads": 10, "init_scale": 0.1},
                      train={"method": "gd", "lr": 1e-2, "steps": 100})
FIG3_ORTHOGONAL = Preset("sander2024", "spec sander2024 Fig. 3 orthogonal, §3.10 init, §4.3: d=10, "
                         "T_max=20, H=8, init 0.1, exact GD lr 1e-3, 1e5 steps",
                         task={"dim": 10, "context": 20, "context_dist": "orthogonal"},
                         model={"heads": 8, "init_scale": 0.1},
                         train={"method": "gd", "lr": 1e-3, "steps": 100_000},
                         when={"context_dist": "orthogonal"})
#: Fig. 6: d = 1, T_max = 30, 𝒲(μ = 50), P = 0, plain GD at the averaged loss's lr 0.5 (the summed
#: loss's lr 0.5/29), stopped at averaged loss 1e-3
FIG6 = Preset("sander2024", "spec sander2024 Fig. 6: d=1, T_max=30, μ=50, P=0, GD lr 0.5 on the "
              "averaged loss (0.5/29 summed), stop at 1e-3 (×29 summed)",
              task={"dim": 1, "context": 30, "context_dist": "positional", "mu": 50.0},
              model={"init_scale": 0.0},
              train={"method": "gd", "lr": 0.5 / 29, "steps": 100_000, "target_loss": 29e-3})
#: Fig. 5 (§4.3): d = 5, T = 50, Haar O(5), augmented tokens, Adam lr 5e-3, 2000 epochs of 2¹⁴
#: sequences in batches of 1024 (32 000 steps, drawn online), PyTorch default init
FIG5_TASK = {"dim": 5, "context": 50, "context_dist": "haar", "representation": "real",
             "encoding": "augmented", "s1": "unit"}
FIG5_TRAIN = {"method": "adam", "lr": 5e-3, "steps": 32_000, "batch_size": 1024, "test_size": 1024}
FIG5 = Preset("sander2024", "spec sander2024 Fig. 5, §4.3: d=5, T=50, Haar O(5), augmented, "
              "Adam lr 5e-3, 32000 steps of 1024 (2000 epochs of 2^14)", task=FIG5_TASK,
              model={"dtype": "float32"}, train=FIG5_TRAIN)
FIG10 = Preset("sander2024", "spec sander2024 Fig. 10 (as Fig. 5) with the App. B MLP of width 32",
               task=FIG5_TASK, model={"heads": 32, "dtype": "float32"}, train=FIG5_TRAIN)
#: Fig. 7: d = 5 duplicated (E = 10), T = 50, Haar O(5), H = 64, Adam lr 1e-2, 200 epochs (3200 steps)
FIG7 = Preset("sander2024", "spec sander2024 Fig. 7, §4.3: d=5, k=2 (E=10), T=50, Haar O(5), H=64, "
              "Adam lr 1e-2, 3200 steps of 1024 (200 epochs of 2^14)",
              task={"dim": 5, "context": 50, "context_dist": "haar", "representation": "real",
                    "duplicate": 2},
              model={"heads": 64, "dtype": "float32"},
              train={"method": "adam", "lr": 1e-2, "steps": 3200, "batch_size": 1024,
                     "test_size": 1024})
#: Fig. 9 (App. B): model (6) on commuting unitary contexts, d = 1 complex (its real form: d = 2,
#: H = 2 real heads), T_max = 10, A, B, P ~ 0.1·N(0, 1), Adam lr 5e-3 on fresh batches
FIG9 = Preset("sander2024", "spec sander2024 Fig. 9, App. B: d=1 complex (real d=2), T_max=10, "
              "unitary, H=2, init 0.1, Adam lr 5e-3, 2000 steps of 128",
              task={"dim": 2, "context": 10, "context_dist": "unitary", "representation": "real",
                    "s1": "unit"},
              model={"heads": 2, "init_scale": 0.1},
              train={"method": "adam", "lr": 5e-3, "steps": 2000, "batch_size": 128})

LAYERS = Field("layers", int, "number of layers L (Fig. 5)", 1)
SOFTMAX = Field("softmax", boolean, "softmax attention (App. B)")
#: the nn.Linear-initialised families (init_scale unused)
TORCH_INIT = (INIT_SEED, DTYPE)
#: the positional models' T_max is the task's context; non_aug's k is the task's duplicate
T_MAX = {"context": "context"}


def _diag(c):                    # t = T_max, the task's context
    d, h, t = c.dim, c.heads, c.context
    return (("A", (h, d)), ("B", (h, d)), ("P", (t, t)))


def _pe_only(c):
    return (("P", (c.context, c.context)),)


def _aug(c):
    return (("a", (4,)), ("b", (2,)))


def _aug_layers(c):             # L layers, E = 3d
    d, n = c.dim, c.layers
    e = 3 * d
    per_layer = [(f"{w}{q}", (n, e, e) if w == "W" else (n, e)) for q in "qkvo" for w in "Wb"]
    return (*per_layer, ("ln_w", (n, e)), ("ln_b", (n, e)), ("fc_w", (e, e)), ("fc_b", (e,)))


def _aug_transformer(c):        # AUG-L plus an MLP of hidden width m = heads
    d, m, n = c.dim, c.heads, c.layers
    e = 3 * d
    per_layer = [(f"{w}{q}", (n, e, e) if w == "W" else (n, e)) for q in "qkvo" for w in "Wb"]
    mlp = (("W1", (n, m, e)), ("b1", (n, m)), ("W2", (n, e, m)), ("b2", (n, e)),
           ("ln2_w", (n, e)), ("ln2_b", (n, e)))
    return (*per_layer, ("ln_w", (n, e)), ("ln_b", (n, e)), *mlp, ("fc_w", (e, e)), ("fc_b", (e,)))


def _non_aug(c):
    """E = k·d (k the task's duplicate); 100 learned positions (the authors' nn.Embedding(100, E))."""
    d, h, k = c.dim, c.heads, c.duplicate
    e = d * k
    qkv = [(f"{w}{q}", (h, e, e) if w == "W" else (h, e)) for q in "qkv" for w in "Wb"]
    return (*qkv, ("pos", (100, e)), ("Wo", (e, e)), ("bo", (e,)), ("ln_w", (e,)),
            ("ln_b", (e,)), ("fc_w", (d, e)), ("fc_b", (d,)))


#: gradient flow θ̇ = −∇ℓ (Prop. 5, App. A.7) on ℓ of Eq. 3, Σ_T E‖T_θ(e_1:T) − s_T+1‖² (no ½,
#: summed over T: the task's loss); the authors' Fig. 6 code averages over T (lr 0.5 there = 0.5/29)
TIME = PaperTime(2, "gradient flow θ̇ = −∇ℓ (Prop. 5) on ℓ of Eq. 3 (Σ_T E‖·‖², no ½)")


#: the token encoding each family reads (tasks/autoregressive.py): e_t = s_t, or (0, s_t, s_{t−1})
#: and the representation of those that read real tokens only (no complex eigenbasis)
PLAIN, AUGMENTED = {"encoding": "plain"}, {"encoding": "augmented"}
REAL = {"representation": "real"}
#: the families whose tokens are d wide read the task's states once (no duplication, §6)
ONCE = {"duplicate": 1}

for _card in (
    ModelCard("diag", "sander2024", "DIAG: H heads with diagonal A, B and positions P (Eq. 6)", BASE,
              _diag, {"autoregressive": (FIG3_UNITARY, FIG3_ORTHOGONAL)}, from_task=T_MAX,
              time=TIME, task_needs=PLAIN | ONCE,
              seconds_per_step={"autoregressive": 3.68e-05}),
    ModelCard("pe_only", "sander2024", "PE-only attention: only P is trained (Eq. 7)",
              (*BASE[1:],), _pe_only, {"autoregressive": (FIG6,)}, from_task=T_MAX, time=TIME,
              task_needs=PLAIN | ONCE,
              seconds_per_step={"autoregressive": 0.000109}),
    ModelCard("aug", "sander2024", "AUG-1: six scalars a1..a4, b1, b2 (Eq. 4)", (*BASE[1:],), _aug,
              {"autoregressive": (FIG5,)}, time=TIME, task_needs=AUGMENTED,
              seconds_per_step={"autoregressive": 0.0414}),
    ModelCard("aug_layers", "sander2024", "AUG-L: L layers on augmented tokens (spec §3.3)",
              (*TORCH_INIT, LAYERS, SOFTMAX), _aug_layers, {"autoregressive": (FIG5,)}, time=TIME,
              task_needs=AUGMENTED | REAL,
              seconds_per_step={"autoregressive": 0.07}),
    ModelCard("aug_transformer", "sander2024", "AUG-L with softmax and an MLP of width --heads "
              "(App. B)", (HEADS, *TORCH_INIT, LAYERS, SOFTMAX), _aug_transformer,
              {"autoregressive": (FIG10,)}, time=TIME, task_needs=AUGMENTED | REAL,
              seconds_per_step={"autoregressive": 0.0947}),
    ModelCard("non_aug", "sander2024", "the non-augmented transformer of §6 (Figs. 7-8)",
              (HEADS, *TORCH_INIT,
               Field("lookahead", boolean, "Eq. 6's one-step look-ahead mask (default: causal)",
                     False),
               Field("init_same", boolean, "every head starts as head 0 plus 0.05·N(0, 1) (Fig. 8)",
                     False)),
              _non_aug, {"autoregressive": (FIG7,)}, from_task={"duplicate": "duplicate"}, time=TIME,
              task_needs=PLAIN | REAL,
              seconds_per_step={"autoregressive": 5.87}),
    ModelCard("eq6", "sander2024", "model (6) with full A, B and P, linear or softmax scores, "
              "optionally a residual MLP (App. B, Fig. 9)",
              (HEADS, INIT, INIT_SEED, DTYPE, SOFTMAX,
               Field("mlp_width", int, "eq6: hidden width of the residual ReLU MLP (0: none)", 0)),
              None, {"autoregressive": (FIG9,)}, from_task=T_MAX, time=TIME,
              task_needs=PLAIN | REAL | ONCE, seconds_per_step={"autoregressive": 0.00216}),
):
    register_model_card(_card)
