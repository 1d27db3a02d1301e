"""The task, model and trainer options of the command line, declared once for `train` and `sweep`.

Each option names the config it fills (task, model or train), its field and how to parse it; the
CLI help comes from the same table, so `fastattn train --help` explains every option.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastattn.tasks.spectra import SPECTRA


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
    flag: str
    target: str            # "task", "model", "train" or "cli"
    field: str
    parse: Callable[[str], Any]
    help: str
    default: Any = None


OPTIONS: tuple[Option, ...] = (
    # task
    Option("--dim", "task", "dim", int, "token dimension D", 4),
    Option("--context", "task", "context", context_value,
           "context length N; '1..31' draws N uniformly (next-token loss, Eq. 23); '8,16' a list", 31),
    Option("--spectrum", "task", "spectrum", str,
           f"eigenvalues of Λ: one of {', '.join(SPECTRA)}", "linear"),
    Option("--rotate", "task", "rotate", boolean,
           "random eigenvectors for Λ (true/false), drawn from --rotation-seed", True),
    Option("--rotation-seed", "task", "rotation_seed", int, "seed of Λ's random eigenbasis", 0),
    Option("--w-mean", "task", "w_mean", floats, "task-prior mean μ_w, comma-separated (default 0)"),
    Option("--noise", "task", "noise", float, "label-noise variance σ²", 0.0),
    Option("--fixed-task-fraction", "task", "fixed_task_fraction", float,
           "fraction of sequences with one fixed task vector (in-weight learning)", 0.0),
    Option("--fixed-task-seed", "task", "fixed_task_seed", int, "seed of the fixed task vector", 0),
    Option("--data-seed", "task", "data_seed", int, "seed of the training data stream", 0),
    # model
    Option("--model", "model", "name", str,
           "merged | separate | cubic_mlp | softmax_merged | softmax_separate", "separate"),
    Option("--heads", "model", "heads", int, "number of heads H (MLP: hidden width)", 5),
    Option("--rank", "model", "rank", int, "key/query rank R (separate models)", 1),
    Option("--init", "model", "init_scale", float, "initialisation scale w_init (App. C.2)", 1e-2),
    Option("--init-seed", "model", "init_seed", int, "seed of the initialisation", 0),
    Option("--init-scheme", "model", "init_scheme", str, "paper (App. C.2) | code (public code)",
           "paper"),
    Option("--full", "model", "full", boolean, "merged: keep every block of W^V, W^KQ (Eq. 91)",
           False),
    Option("--scale", "model", "scale", float, "softmax models: score scale 1/ρ", 1.0),
    Option("--dtype", "model", "dtype", str, "float64 | float32 (sampled training)", "float64"),
    # trainer
    Option("--method", "train", "method", str, "flow | gd | sgd | adam", "flow"),
    Option("--time", "train", "t_end", float, "flow: gradient-flow time to reach (τ = 1)"),
    Option("--integrator", "train", "integrator", str,
           "flow: auto (small P: RK45, Rodas4 while stiff; P > 2000: stabilized, Rodas4 once settled)"
           " | stiff (Rodas4) | stiff_krylov | stabilized | rk45 | rk4 | ode23s", "auto"),
    Option("--rtol", "train", "rtol", float, "flow: relative tolerance", 1e-8),
    Option("--atol", "train", "atol", float, "flow: absolute tolerance", 1e-12),
    Option("--dt", "train", "dt", float, "flow with rk4: fixed step"),
    Option("--lr", "train", "lr", float, "gd/sgd/adam: learning rate η (time advances 2η per step)"),
    Option("--steps", "train", "steps", int, "gd/sgd/adam: number of steps"),
    Option("--batch-size", "train", "batch_size", int, "sgd/adam: online batch size", 1024),
    Option("--dataset-size", "train", "dataset_size", int,
           "sgd/adam: train full-batch on this many fixed sequences"),
    Option("--whiten", "train", "whiten", boolean, "whiten the fixed data set's tasks (code)", False),
    Option("--sampler", "train", "sampler", str,
           "sgd/adam online: tokens (full token tensors) | stats (fused (β, x_q, y_q) sampler)", "tokens"),
    Option("--loss", "train", "loss", str, "query | next_token (sgd/adam)", "query"),
    Option("--records", "train", "n_records", int, "log-spaced loss records", 400),
    Option("--snapshots", "train", "n_snapshots", int, "log-spaced parameter snapshots", 40),
    Option("--target-loss", "train", "target_loss", float, "stop at this training loss"),
    Option("--grad-tol", "train", "grad_tol", float, "flow/gd: stop below this gradient norm"),
    Option("--test-size", "train", "test_size", int, "sgd/adam: held-out ICL/IWL test-set size", 0),
    Option("--eval-seed", "train", "eval_seed", int, "seed of the test sets", 1),
    Option("--threads", "train", "threads", int, "sgd/adam: torch threads (default: 1 for small batches)"),
)


def add_options(parser: argparse.ArgumentParser, parse: Callable[[Option], Callable] | None = None
                ) -> None:
    """Add every option to `parser`; `parse` may wrap each option's parser (sweeps take lists)."""
    groups = {t: parser.add_argument_group(t) for t in ("task", "model", "train")}
    for opt in OPTIONS:
        default = f" (default: {opt.default})" if opt.default is not None else ""
        groups[opt.target].add_argument(opt.flag, dest=opt.flag[2:].replace("-", "_"),
                                        type=parse(opt) if parse else opt.parse,
                                        default=None, help=opt.help + default)


def collect(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """{"task": {...}, "model": {...}, "train": {...}}: given values, else the defaults."""
    out: dict[str, dict[str, Any]] = {"task": {}, "model": {}, "train": {}}
    for opt in OPTIONS:
        value = getattr(args, opt.flag[2:].replace("-", "_"))
        if value is None:
            value = opt.default
        if value is not None:
            out[opt.target][opt.field] = value
    return out


def build_task(task_options: dict[str, Any]):
    """The `LinearRegression` of a dict of task option values (named spectra resolved)."""
    from fastattn.tasks import LinearRegression, spectrum

    task_kw = dict(task_options)
    if isinstance(task_kw.get("spectrum"), str):
        task_kw["spectrum"] = tuple(spectrum(task_kw["spectrum"], int(task_kw["dim"])))
    if isinstance(task_kw.get("context"), list):
        task_kw["context"] = tuple(task_kw["context"])
    return LinearRegression(**task_kw)


def build_run(spec: dict[str, dict[str, Any]]):
    """(task, model, TrainConfig) from a {"task", "model", "train"} dict of option values."""
    from fastattn.models import ModelConfig, build_model
    from fastattn.training import TrainConfig

    task = build_task(spec["task"])
    model_kw = dict(spec["model"])
    if model_kw.get("name") in ("merged", "cubic_mlp", "softmax_merged"):
        model_kw["rank"] = 1
    model = build_model(ModelConfig(dim=task.dim, **model_kw))
    return task, model, TrainConfig(**spec["train"])
