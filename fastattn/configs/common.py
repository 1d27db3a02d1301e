"""Fields every `BaseModelConfig` family shares, and the trainer's options (TrainConfig's fields)."""

from __future__ import annotations

from fastattn.configs.base import Field, boolean, floats, metric_target

#: the `BaseModelConfig` fields (dim comes from the task)
HEADS = Field("heads", int, "number of heads H")
INIT = Field("init_scale", float, "initialisation scale w_init")
INIT_SEED = Field("init_seed", int, "seed of the initialisation", 0)
DTYPE = Field("dtype", str, "float64 | float32 (sampled training; flows are float64)", "float64",
              choices=("float64", "float32"))
BASE = (HEADS, INIT, INIT_SEED, DTYPE)

#: the trainer (fastattn.training.TrainConfig), the same for every pair; presets set its values
TRAIN: tuple[Field, ...] = (
    Field("method", str, "flow | gd | sgd | adam | task_sgd (epochs over the fixed tasks; --steps "
          "counts updates)", "flow", choices=("flow", "gd", "sgd", "adam", "task_sgd")),
    Field("t_end", float, "flow: the record's time t to reach (dθ/dt = −½∇L, a GD step of rate η "
          "is 2η of t); each model's paper time in t is under the model"),
    Field("integrator", str, "flow: auto (RK45 while not stiff; stabilized, Hessian-free Rodas4 "
          "once settled) | stiff (Rodas4) | stiff_krylov | stabilized | rk45 | rk4", "auto"),
    Field("rtol", float, "flow: relative tolerance", 1e-8),
    Field("atol", float, "flow: absolute tolerance", 1e-12),
    Field("dt", float, "flow with rk4: fixed step"),
    Field("lr", float, "gd/sgd/adam: learning rate η (time advances 2η per step)"),
    Field("steps", int, "gd/sgd/adam: number of steps"),
    Field("batch_size", int, "sgd/adam: online batch size", 1024),
    Field("weight_decay", float, "adam: decoupled weight decay (AdamW)", 0.0),
    Field("betas", floats, "adam: β1/β2", (0.9, 0.999)),
    Field("warmup", int, "sgd/adam: linear learning-rate warm-up steps (0: none)", 0),
    Field("dataset_size", int, "sgd/adam: train full-batch on this many fixed sequences"),
    Field("whiten", boolean, "whiten the fixed data set's tasks (code)", False),
    Field("sampler", str, "sgd/adam online: auto (fast where the fused He step fits, else tokens) | "
          "tokens (full token tensors) | stats (fused (β, x_q, y_q) sampler) | fast (He fast stream, "
          "fused C++ Adam)", "auto", choices=("auto", "tokens", "stats", "fast")),
    Field("loss", str, "sgd/adam: which of the task's losses (default: its first; "
          "linear_regression: query | next_token)"),
    Field("n_records", int, "log-spaced loss records", 400),
    Field("n_snapshots", int, "log-spaced parameter snapshots", 40),
    Field("target_loss", float, "stop at this training loss"),
    Field("grad_tol", float, "flow/gd: stop below this gradient norm"),
    Field("test_size", int, "sgd/adam: held-out test-set size", 0),
    Field("eval_seed", int, "seed of the test sets", 1),
    Field("target_metric", metric_target, "sgd/adam: stop once a held-out metric of the task "
          "(token tasks: e.g. test_acc, icl_score) reaches a value, NAME:VALUE"),
    Field("patience", int, "loss records taken after --target-metric is met", 0),
    Field("threads", int, "torch and fused-step threads (default: 1 for exact flows, the fused step "
          "and small batches, else the machine share; docs/performance.md)"),
)
