"""`TrainConfig`: how a run is trained, every engine's options in one flat frozen dataclass (a run
record's "train" is `asdict` of it, so `TrainConfig(**record["train"])` rebuilds it), and
`diverged`, the divergence rule every sampled engine applies.

Its own module, below the engines (flow, fused, task_sgd) and the trainer that dispatches to them,
so that no engine imports the trainer back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastattn import _validate as check
from fastattn import population

METHODS = ("flow", "gd", "sgd", "adam", "task_sgd")
INTEGRATORS = ("auto", "stiff", "stiff_krylov", "stabilized", "rk45", "rk4")
SAMPLERS = ("auto", "tokens", "stats", "fast")
#: the example value a "needs lr / steps" error offers for each (a sampled run has no default)
EXAMPLE = {"lr": 0.01, "steps": 1000}


@dataclass(frozen=True)
class TrainConfig:
    """How to train. Seeds of data and initialisation live on the task and the model.

    Attributes:
        method: "flow", "gd", "sgd" or "adam".
        t_end: flow: integrate to this time (required for "flow").
        integrator: flow: "auto" (default: RK45 while the flow is not stiff, then the order-4
            stabilized explicit method with Hessian-free Rodas4 episodes once it has settled),
            "stiff" (Rodas4 throughout), "stiff_krylov", "stabilized", "rk45", "rk4"
            (fastattn.population.FlowOptions).
        rtol, atol: flow: error tolerances of the adaptive integrators. dt: "rk4" step.
        lr: learning rate η (gd, sgd, adam). steps: number of optimiser steps (gd, sgd, adam).
        weight_decay: adam: decoupled weight decay λ (AdamW: θ ← θ − ηλθ before the Adam step;
            0, the default, is Adam). betas: adam: (β₁, β₂).
        warmup: sgd/adam: linear learning-rate warm-up, η·min(1, (k + 1)/warmup) at step k (0: none).
        batch_size: online sgd/adam batch. dataset_size: train full-batch on this many fixed
            sequences instead (`task.fixed_dataset(dataset_size, task.data_seed)`); whiten: whiten
            that data set's task vectors as the Zhang et al. code does.
        sampler: sgd/adam online: "tokens" (`task.sample`, the full token tensors), "stats" (the
            fused sampler `task.sample_stats` draws only (β, x_q, y_q); linear regression with a
            linear model, query loss), "fast" (He 2025's fast stream: batch k a pure function of
            (data_seed, k) from the counter-based generator of docs/conventions.md, same law as
            "tokens", other bits; trained by the fused C++ Adam step: multihead_softmax on
            linear_regression, Adam) or "auto" (the default: "fast" where the run fits the fused
            step, else "tokens"; the record stores the one chosen and `backend` says why).
        loss: sgd/adam: which of `task.losses` to train (default: the task's first; linear
            regression: "query", the last-token loss, or "next_token", Eq. 23). Exact methods
            train the pair's population objective and take no loss.
        n_records: number of log-spaced points at which the loss is recorded.
        n_snapshots: number of log-spaced parameter snapshots (the final state is always kept).
        record_every, snapshot_every: gd, sgd, adam: record the loss (snapshot the parameters)
            at every k-th step instead, 0 and the last step included (1: every step, what a
            figure that reads first crossings off the record needs).
        snapshot_params: sgd/adam: False keeps at each snapshot only the model's
            `snapshot_series` (the trajectory's `series`, `[S]` at `snapshot_time`) and, of the
            parameters, the final state (`params` `[1, P]`): long runs of large models snapshotted
            often (a full disentangled transformer every step) without S × P floats.
        target_loss: stop once the training loss is at or below it.
        grad_tol: flow/gd: stop once the gradient norm is below it.
        events: flow/gd: `population.CoordinateEvent` / `LossEvent` crossings to locate (a terminal
            one stops the run, status "event"); the trajectory's `events` holds the crossings.
        test_size: sgd/adam: evaluate on held-out in-context and in-weight test sets of this size
            (`task.test_sets`); a task with `metrics` (the token tasks) records its held-out
            measures there instead of one loss per set (the trajectory's `metrics`).
        eval_seed: seed of the test sets; must differ from the task's data_seed.
        target_metric: sgd/adam: (name, value): stop once the held-out metric `name` (the task's
            `metrics`; needs test_size) is at or above `value` at a loss record, `patience` loss
            records later (status "target_metric").
        progress: show a progress bar (default: when attached to a terminal).
        threads: threads of the run: torch's intra-op threads, and the fused He step's (default:
            1 for the exact objectives, the fused step and sampled batches of fewer than 2²⁰
            numbers — small ops run far slower split across threads, especially on a busy
            machine — else this process's share of the machine, its cores divided among
            $FASTATTN_WORKERS workers; fastattn.training.threads). Restored when training ends.
    """

    method: str = "flow"
    t_end: float | None = None
    integrator: str = "auto"
    rtol: float = 1e-8
    atol: float = 1e-12
    dt: float | None = None
    lr: float | None = None
    steps: int | None = None
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    warmup: int = 0
    batch_size: int = 1024
    dataset_size: int | None = None
    whiten: bool = False
    sampler: str = "auto"
    loss: str | None = None
    n_records: int = 400
    n_snapshots: int = 40
    record_every: int | None = None
    snapshot_every: int | None = None
    snapshot_params: bool = True
    target_loss: float | None = None
    grad_tol: float | None = None
    test_size: int = 0
    eval_seed: int = 1
    target_metric: tuple[str, float] | None = None
    patience: int = 0
    progress: bool | None = None
    threads: int | None = None
    events: tuple[population.CoordinateEvent | population.LossEvent, ...] = ()

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}; got {self.method!r}")
        if self.method == "flow":
            if self.t_end is None:
                raise ValueError("method='flow' needs t_end (the gradient-flow time to reach)")
            check.positive_float("t_end", self.t_end)
            if self.integrator not in INTEGRATORS:
                raise ValueError(f"integrator must be one of {INTEGRATORS}; got {self.integrator!r}")
            check.positive_float("rtol", self.rtol)
            check.positive_float("atol", self.atol)
            if self.integrator == "rk4":
                if self.dt is None:
                    raise ValueError("integrator='rk4' needs dt=STEP, its fixed step (e.g. dt=0.01)")
                check.positive_float("dt", self.dt)
        else:
            missing = [name for name in ("lr", "steps") if getattr(self, name) is None]
            if missing:
                raise ValueError(f"method={self.method!r} needs {' and '.join(missing)}: give "
                                 + " and ".join(f"{name}={EXAMPLE[name]}" for name in missing))
            check.positive_float("lr", self.lr)
            check.positive_int("steps", self.steps)
        if check.nonnegative_float("weight_decay", self.weight_decay) and self.method != "adam":
            raise ValueError(f"weight_decay is for method='adam' (AdamW); method={self.method!r} takes none")
        betas = tuple(float(b) for b in self.betas)
        if len(betas) != 2 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"betas must be two numbers in [0, 1); got {self.betas!r}")
        object.__setattr__(self, "betas", betas)
        object.__setattr__(self, "warmup", check.nonnegative_int("warmup", self.warmup))
        if self.warmup and self.method not in ("sgd", "adam"):
            raise ValueError(f"warmup is for sampled training (sgd, adam); method={self.method!r} "
                             "takes none")
        if self.target_metric is not None:
            if len(self.target_metric) != 2 or not isinstance(self.target_metric[0], str):
                raise ValueError("target_metric must be (metric name, value), e.g. ('test_acc', "
                                 f"0.99); got {self.target_metric!r}")
            object.__setattr__(self, "target_metric",
                               (self.target_metric[0], float(self.target_metric[1])))
            if self.method not in ("sgd", "adam") or not self.test_size:
                raise ValueError("target_metric is checked on the held-out metrics of sampled "
                                 "training: it needs method='sgd' or 'adam' and test_size > 0")
        if self.target_loss is not None:
            check.nonnegative_float("target_loss", self.target_loss)
        if self.grad_tol is not None:
            check.positive_float("grad_tol", self.grad_tol)
        object.__setattr__(self, "patience", check.nonnegative_int("patience", self.patience))
        check.positive_int("batch_size", self.batch_size)
        if self.dataset_size is not None:
            check.positive_int("dataset_size", self.dataset_size)
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS}; got {self.sampler!r}")
        if self.sampler == "stats" and (self.loss not in (None, "query")
                                        or self.dataset_size is not None):
            raise ValueError("sampler='stats' is for online training on the query loss; "
                             "use sampler='tokens' with dataset_size or another loss")
        if self.loss is not None and self.method in ("flow", "gd"):
            raise ValueError(f"loss={self.loss!r} is for sampled training (sgd, adam); method="
                             f"{self.method!r} trains the pair's population objective (for linear "
                             "regression's exact next-token loss use context=range(1, N+1), "
                             "Eq. 23-24)")
        check.positive_int("n_records", self.n_records)
        check.positive_int("n_snapshots", self.n_snapshots)
        for name in ("record_every", "snapshot_every"):
            if getattr(self, name) is not None:
                check.positive_int(name, getattr(self, name))
                if self.method in ("flow", "task_sgd"):
                    raise ValueError(f"{name} counts optimiser steps (gd, sgd, adam); method="
                                     f"{self.method!r} records at n_records / n_snapshots")
        if not self.snapshot_params and self.method not in ("sgd", "adam"):
            raise ValueError(f"snapshot_params=False is for sampled runs (sgd, adam); method="
                             f"{self.method!r} keeps its snapshots")
        if self.test_size:
            check.positive_int("test_size", self.test_size)
        if self.threads is not None:
            object.__setattr__(self, "threads", check.thread_count("threads", self.threads))
        if self.events and self.method not in ("flow", "gd"):
            raise ValueError(f"events are located on exact flows; method={self.method!r} takes none")
        object.__setattr__(self, "events", tuple(_event(e) for e in self.events))


def _event(e: Any) -> population.CoordinateEvent | population.LossEvent:
    """An event, or its record's dict (a coordinate event has an "index")."""
    if isinstance(e, Mapping):
        return population.CoordinateEvent(**e) if "index" in e else population.LossEvent(**e)
    return e


#: a sampled run has diverged once its training loss exceeds this multiple of its initial loss
#: (or is not finite). Adam's steps are bounded by η, so its loss grows polynomially and can stay
#: finite for ever; plain SGD and the exact methods blow up geometrically and reach inf.
DIVERGENCE_FACTOR = 1e8


def diverged(loss: float, initial: float) -> bool:
    """Whether a training loss means divergence: not finite, or above DIVERGENCE_FACTOR × the
    initial loss (when that is positive)."""
    return not math.isfinite(loss) or (initial > 0 and loss > DIVERGENCE_FACTOR * initial)
