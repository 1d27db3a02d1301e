"""The task, model and trainer options of the command line, declared once for `train` and `sweep`.

Each option names the config it fills (task, model or train), its field, how to parse it and the
families it applies to (task kinds or model kinds; empty: every family). The CLI help comes from
the same table, one heading per family, so `fastattn train --help` explains every option. Task and
model families come from the registries (`fastattn.tasks.TASKS`, `fastattn.models.MODELS`).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastattn.models import MODELS, get_model
from fastattn.tasks import TASKS, get_task, spectrum
from fastattn.tasks.spectra import SPECTRA, toeplitz_cov


def context_value(text: str) -> int | list[int]:
    """"31" → 31; "1..31" → [1, ..., 31] (uniform: the next-token loss); "8,16" → [8, 16]."""
    if ".." in text:
        lo, hi = (int(v) for v in text.split(".."))
        return list(range(lo, hi + 1))
    if "," in text:
        return [int(v) for v in text.split(",")]
    return int(text)


def floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def boolean(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false; got {text!r}")


@dataclass(frozen=True)
class Option:
    """One command-line option. target: the config it fills ("task", "model" or "train"); families:
    the task kinds (target "task") or model kinds (target "model") it applies to, () for all."""

    flag: str
    target: str
    field: str
    parse: Callable[[str], Any]
    help: str
    default: Any = None
    families: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The argparse destination: the flag without dashes, e.g. "init_seed"."""
        return self.flag[2:].replace("-", "_")


LR = ("linear_regression",)
INDUCTION = ("induction",)
#: Musat et al. 2025's models (fastattn.models.disentangled; not `MODELS` families)
INDUCTION_MODELS = ("three_param", "gram19", "disentangled")
INDUCTION_MODELS += ("standard_transformer",)     # §4's token transformer (models/standard_transformer)
TOKENS = ("induction_tokens",)
AR = ("autoregressive",)
WT = ("wishart_tasks",)
SEPARATE = ("separate", "softmax_separate")
SOFTMAX = ("softmax_merged", "softmax_separate")
HE2025 = ("multihead_softmax", "multihead_linear")
NORMALIZED = ("multihead_softmax", "kernel_regressors")

OPTIONS: tuple[Option, ...] = (
    # task
    Option("--task", "task", "kind", str, f"task family: {' | '.join(TASKS)}", "linear_regression"),
    Option("--dim", "task", "dim", int, "token dimension D", 4),
    Option("--context", "task", "context", context_value,
           "context length N; '1..31' draws N uniformly (next-token loss, Eq. 23); '8,16' a list"
           " (autoregressive: T_max, the longest context)", 31, LR + INDUCTION + AR + WT),
    Option("--spectrum", "task", "spectrum", str,
           f"eigenvalues of Λ: one of {', '.join(SPECTRA)}", "linear", LR + WT),
    Option("--rotate", "task", "rotate", boolean,
           "random eigenvectors for Λ (true/false), drawn from --rotation-seed", True, LR + WT),
    Option("--rotation-seed", "task", "rotation_seed", int, "seed of Λ's random eigenbasis", 0, LR + WT),
    Option("--w-mean", "task", "w_mean", floats, "task-prior mean μ_w, comma-separated (default 0)",
           None, LR),
    Option("--noise", "task", "noise", float, "label-noise variance σ²", 0.0, LR),
    Option("--fixed-task-fraction", "task", "fixed_task_fraction", float,
           "fraction of sequences with one fixed task vector (in-weight learning)", 0.0, LR),
    Option("--fixed-task-seed", "task", "fixed_task_seed", int, "seed of the fixed task vector", 0,
           LR),
    Option("--data-seed", "task", "data_seed", int, "seed of the training data stream", 0),
    Option("--data", "task", "data", str, "gaussian | orthonormal (exact flows need orthonormal)",
           "gaussian", INDUCTION),
    Option("--query", "task", "query", str, "uniform | last (q = N, Theorem 2)", "uniform", INDUCTION),
    Option("--reduction", "task", "reduction", str, "sum (theory) | mean (App. C/D SGD) over D", "sum",
           INDUCTION),
    Option("--vocab", "task", "vocab", int, "vocabulary size N_T", 32, TOKENS),
    Option("--block", "task", "block", int, "number of positions N_P", 32, TOKENS),
    Option("--pairs", "task", "pairs", int, "item-label pairs K per sequence", 8, TOKENS),
    Option("--placement", "task", "placement", str, "random (offset in the block, App. E) | start",
           "random", TOKENS),
    Option("--w-var", "task", "w_cov", float,
           "task prior Σ_w = VAR·I (He et al.: 1/D; default Σ_w = I)", None, LR),
    Option("--cov-rho", "task", "cov", float,
           "Λ_ij = ρ^|i−j| (AR(1) covariance) instead of --spectrum", None, LR),
    Option("--context-dist", "task", "context_dist", str,
           "unitary | orthogonal | haar | positional (Sander et al. 2024 §2.2)", "unitary", AR),
    Option("--representation", "task", "representation", str, "complex | real", "complex", AR),
    Option("--encoding", "task", "encoding", str, "plain | augmented (e_t = (0, s_t, s_{t-1}))",
           "plain", AR),
    Option("--duplicate", "task", "duplicate", int, "copies of s_t in a plain token", 1, AR),
    Option("--s0", "task", "s0", str, "augmented tokens' s_0: zero (code) | backward (W^-1 s_1)",
           "zero", AR),
    Option("--s1", "task", "s1", str, "start s_1: ones (theory) | unit (the §6 code)", "ones", AR),
    Option("--mu", "task", "mu", float, "μ of the positional distribution 𝒲(μ)", 1.0, AR),
    Option("--tasks", "task", "tasks", lambda v: v if v == "fresh" else int(v),
           "number P of fixed tasks, or 'fresh' (a new task every sequence)", 64, WT),
    Option("--center-tasks", "task", "center_tasks", boolean, "subtract the task set's mean λ",
           False, WT),
    Option("--whiten-tasks", "task", "whiten_tasks", boolean,
           "rescale each mode of the task set to (1/P) Σ λ² = 1", False, WT),
    Option("--task-seed", "task", "task_seed", int, "seed of the fixed task set", 0, WT),
    # model
    Option("--model", "model", "kind", str, f"model family: {' | '.join((*MODELS, *INDUCTION_MODELS))}",
           "separate"),
    Option("--heads", "model", "heads", int, "number of heads H (MLP: hidden width)", 5),
    Option("--init", "model", "init_scale", float, "initialisation scale w_init (App. C.2)", 1e-2),
    Option("--init-seed", "model", "init_seed", int, "seed of the initialisation", 0),
    Option("--init-scheme", "model", "init_scheme", str, "paper (App. C.2) | code (public code)",
           "paper"),
    Option("--dtype", "model", "dtype", str, "float64 | float32 (sampled training)", "float64"),
    Option("--rank", "model", "rank", int, "key/query rank R", 1, SEPARATE),
    Option("--full", "model", "full", boolean,
           "keep every block of W^V, W^KQ (Eq. 91): the same as --model merged_full", False,
           ("merged",)),
    Option("--scale", "model", "scale", float, "score scale 1/ρ", 1.0, SOFTMAX),
    Option("--mask", "model", "mask", str, "strict (key j < i) | inclusive (j <= i)", "strict",
           INDUCTION_MODELS),
    Option("--d-model", "model", "d_model", int, "residual width D (= D_H)", 64, ("standard_transformer",)),
    Option("--attn-scale", "model", "attn_scale", boolean, "divide the scores by √D (Eq. 19: no)", False,
           ("standard_transformer",)),
    Option("--init-mode", "model", "init_mode", str,
           "He et al.: torch (nn.Linear default; the default) | small_id | small_id_qk | oppo_small_id; "
           "linear_transformer: aligned (p2 = q1 = init·I, p1 = q2 = 0; the default) | gaussian "
           "(every block N(0, init²))", None, (*HE2025, "linear_transformer")),
    Option("--activation", "model", "activation", str,
           "normalised activation: exp (softmax) | linear | square | tanh", "exp", NORMALIZED),
    Option("--norm-context", "model", "norm_context", int,
           "LinTF's hard-coded 1/L (default: the actual context length)", None, ("multihead_linear",)),
    Option("--layers", "model", "layers", int, "number of layers L (Sander et al. §6, Fig. 5)", 1,
           ("aug_layers", "aug_transformer")),
    Option("--softmax", "model", "softmax", boolean,
           "softmax attention (App. B; default: aug_layers linear, aug_transformer softmax)", None,
           ("aug_layers", "aug_transformer")),
    Option("--init-noise", "model", "init_noise", float, "std of noise added to every block", 0.0,
           ("linear_transformer",)),
    Option("--reduced", "model", "reduced", boolean, "freeze the null blocks p1 = q2 = 0", False,
           ("linear_transformer",)),
    # trainer
    Option("--method", "train", "method", str,
           "flow | gd | sgd | adam | task_sgd (epochs over the fixed tasks; --steps counts updates)",
           "flow"),
    Option("--time", "train", "t_end", float, "flow: gradient-flow time to reach (τ = 1)"),
    Option("--integrator", "train", "integrator", str,
           "flow: auto (RK45 while not stiff; stabilized, Hessian-free Rodas4 once settled)"
           " | stiff (Rodas4) | stiff_krylov | stabilized | rk45 | rk4", "auto"),
    Option("--rtol", "train", "rtol", float, "flow: relative tolerance", 1e-8),
    Option("--atol", "train", "atol", float, "flow: absolute tolerance", 1e-12),
    Option("--dt", "train", "dt", float, "flow with rk4: fixed step"),
    Option("--lr", "train", "lr", float, "gd/sgd/adam: learning rate η (time advances 2η per step)"),
    Option("--steps", "train", "steps", int, "gd/sgd/adam: number of steps"),
    Option("--batch-size", "train", "batch_size", int, "sgd/adam: online batch size", 1024),
    Option("--weight-decay", "train", "weight_decay", float, "adam: decoupled weight decay (AdamW)", 0.0),
    Option("--dataset-size", "train", "dataset_size", int,
           "sgd/adam: train full-batch on this many fixed sequences"),
    Option("--whiten", "train", "whiten", boolean, "whiten the fixed data set's tasks (code)", False),
    Option("--sampler", "train", "sampler", str,
           "sgd/adam online: auto (fast where the fused He step fits, else tokens) | tokens (full "
           "token tensors) | stats (fused (β, x_q, y_q) sampler) | fast (He fast stream, fused "
           "C++ Adam)", "auto"),
    Option("--loss", "train", "loss", str,
           "sgd/adam: which of the task's losses (default: its first; linear_regression: query | "
           "next_token)"),
    Option("--records", "train", "n_records", int, "log-spaced loss records", 400),
    Option("--snapshots", "train", "n_snapshots", int, "log-spaced parameter snapshots", 40),
    Option("--target-loss", "train", "target_loss", float, "stop at this training loss"),
    Option("--grad-tol", "train", "grad_tol", float, "flow/gd: stop below this gradient norm"),
    Option("--test-size", "train", "test_size", int, "sgd/adam: held-out test-set size", 0),
    Option("--eval-seed", "train", "eval_seed", int, "seed of the test sets", 1),
    Option("--threads", "train", "threads", int, "torch and fused-step threads (default: 1 for "
           "exact flows, the fused step and small batches, else the machine share; "
           "docs/performance.md)"),
)

_TITLES = {"task": "task options", "model": "model options", "train": "trainer options"}


def _heading(opt: Option) -> str:
    families = ", ".join(opt.families) if opt.families else "every family"
    return f"{_TITLES[opt.target]} ({families})" if opt.target != "train" else _TITLES["train"]


def add_options(parser: argparse.ArgumentParser, parse: Callable[[Option], Callable] | None = None
                ) -> None:
    """Add every option to `parser`, one argument group per (target, families); `parse` may wrap
    each option's parser (sweeps take lists)."""
    groups: dict[str, Any] = {}
    for opt in OPTIONS:
        heading = _heading(opt)
        if heading not in groups:
            groups[heading] = parser.add_argument_group(heading)
        default = f" (default: {opt.default})" if opt.default is not None else ""
        groups[heading].add_argument(opt.flag, dest=opt.name,
                                     type=parse(opt) if parse else opt.parse,
                                     default=None, help=opt.help + default)


def collect(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """{"task": {...}, "model": {...}, "train": {...}}: given values, else the defaults.

    An option given explicitly that does not apply to the chosen task or model family is an error.
    """
    out: dict[str, dict[str, Any]] = {"task": {}, "model": {}, "train": {}}
    given = {opt.name for opt in OPTIONS if getattr(args, opt.name) is not None}
    for opt in OPTIONS:
        value = getattr(args, opt.name)
        if value is None:
            value = opt.default
        if value is not None:
            out[opt.target][opt.field] = value
    chosen = {"task": out["task"]["kind"], "model": out["model"]["kind"]}
    for opt in OPTIONS:
        if opt.name in given and opt.families and chosen.get(opt.target) not in opt.families:
            which = "--task" if opt.target == "task" else "--model"
            raise ValueError(f"{opt.flag} applies to {opt.target} {', '.join(opt.families)}; "
                             f"not to {which} {chosen[opt.target]}")
    return out


def _linear_regression_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Named spectra resolved at the task's dim; lists of context lengths as tuples."""
    if isinstance(fields.get("spectrum"), str):
        fields["spectrum"] = tuple(spectrum(fields["spectrum"], int(fields["dim"])))
    if isinstance(fields.get("context"), list):
        fields["context"] = tuple(fields["context"])
    if isinstance(fields.get("w_cov"), float):
        fields["w_cov"] = fields["w_cov"] * np.eye(int(fields["dim"]))
    if isinstance(fields.get("cov"), float):
        fields["cov"] = toeplitz_cov(int(fields["dim"]), fields["cov"])
        fields.pop("spectrum", None)
    return fields


def _autoregressive_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """--context is T_max: one length (the loss sums T = 2..T_max)."""
    if not isinstance(fields.get("context", 31), int):
        raise ValueError(f"--context is T_max for task autoregressive: one integer; got "
                         f"{fields['context']!r}")
    return fields


#: task kind → how its option values become the task's fields (when they differ)
TASK_FIELDS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "linear_regression": _linear_regression_fields,
    "autoregressive": _autoregressive_fields,
}


def build_task(task_options: Mapping[str, Any]):
    """The task of a dict of task option values ("kind" defaults to linear_regression); options of
    other task families are ignored."""
    fields = dict(task_options)
    kind = fields.pop("kind", "linear_regression")
    cls = get_task(kind)
    names = {f.name for f in dataclasses.fields(cls)}
    fields = {k: v for k, v in fields.items() if k in names}
    return cls(**TASK_FIELDS.get(kind, dict)(fields))


def model_config(model_options: Mapping[str, Any], dim: int):
    """The model config of a dict of model option values at token dimension `dim`; options of other
    model families are ignored, and merged with full=True is merged_full (Eq. 91)."""
    fields = dict(model_options)
    kind = fields.pop("kind", "separate")
    if kind == "merged" and fields.get("full"):
        kind = "merged_full"
    config = get_model(kind).config
    if kind == "linear_transformer":
        fields.pop("heads", None)                      # one head by definition
    names = {f.name for f in dataclasses.fields(config)} - {"dim"}
    return config(dim=dim, **{k: v for k, v in fields.items() if k in names})


def build_run(spec: Mapping[str, Mapping[str, Any]]):
    """(task, model, TrainConfig) from a {"task", "model", "train"} dict of option values."""
    from fastattn.models import build_model
    from fastattn.training import TrainConfig

    task = build_task(spec["task"])
    if (spec["model"].get("kind") == "standard_transformer") != (task.kind == "induction_tokens"):
        raise ValueError("--task induction_tokens and --model standard_transformer go together (a token "
                         f"task and its model); got --task {task.kind} --model {spec['model'].get('kind')}")
    if spec["model"].get("kind") in INDUCTION_MODELS:
        return task, induction_model(spec["model"], task.dim, task), TrainConfig(**spec["train"])
    model_options = dict(spec["model"])
    if task.kind == "autoregressive":     # the autoregressive models' P is T_max × T_max
        model_options.setdefault("context", task.context)
        model_options.setdefault("duplicate", task.duplicate)   # non_aug: E = k·d
    model = build_model(model_config(model_options, task.dim))
    return task, model, TrainConfig(**spec["train"])


#: exit status of a command ended by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)
INTERRUPTED = 130


class CommandError(Exception):
    """Bad input to a subcommand: printed as one line `fastattn <cmd>: error: …`, exit status 2."""


def cli_names(message: str) -> str:
    """An error message in the command line's words: config fields whose name differs from their
    option's flag become the flag (`t_end` → `--time`, `batch_size=0` → `--batch-size 0`)."""
    for opt in OPTIONS:
        if opt.flag != f"--{opt.field}" and opt.field != "kind":
            message = re.sub(rf"(?<![\w.-]){opt.field}(?:=('?)([^\s',;)]*)\1)?(?!\w)",
                             lambda m, flag=opt.flag: flag + (f" {m[2]}" if m[2] is not None else ""),
                             message)
    return message


def induction_model(model_options: Mapping[str, Any], dim: int, task: Any = None):
    """Musat et al. 2025's disentangled transformer ("disentangled": full weights) or its
    pseudo-parameter restriction ("gram19", "three_param") from the model option values; or its
    standard transformer ("standard_transformer", sized by the token `task`)."""
    from fastattn.models.disentangled import DisentangledConfig, DisentangledTransformer

    fields = dict(model_options)
    kind = fields.pop("kind")
    if kind == "standard_transformer":
        return standard_model(fields, task)
    names = {f.name for f in dataclasses.fields(DisentangledConfig)} - {"dim", "params"}
    config = DisentangledConfig(dim, params="full" if kind == "disentangled" else kind,
                                **{k: v for k, v in fields.items() if k in names})
    return DisentangledTransformer(config)


def standard_model(fields: Mapping[str, Any], task: Any):
    """The standard transformer (Musat et al. 2025 §4) for the token task's vocabulary and block."""
    from fastattn.models.standard_transformer import StandardConfig, StandardTransformer

    names = {f.name for f in dataclasses.fields(StandardConfig)} - {"vocab", "block"}
    return StandardTransformer(StandardConfig(task.vocab, task.block,
                                              **{k: v for k, v in fields.items() if k in names}))
