"""Which engine trains a run: declared, not probed (as `fastattn.ops._dispatch` does for kernels).

Each engine registers what it serves: the methods, the samplers, the model and task kinds (None:
any), the capabilities it needs of the model and the task, and `check(model, task, config)`, its
remaining reasons. `Engine.reasons` lists every reason it cannot train a run; `dispatch` picks the
first engine, in `ENGINES` order (fastest first), with none, and when none can train the run,
raises `NoEngineError` listing each engine's reasons.

The capabilities an engine needs of a model or a task (`snapshot_series`, `forward_stats`,
`query_loss_grad`, ...) are named once, in fastattn.training.capabilities.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from fastattn import population
from fastattn.training import flow, fused, sampled, task_sgd
from fastattn.training.capabilities import (
    FORWARD_STATS,
    QUERY_LOSS_GRAD,
    SAMPLE_STATS,
    SAMPLE_TASK,
    SNAPSHOT_SERIES,
    Capability,
)
from fastattn.training.config import TrainConfig
from fastattn.training.threads import default_threads

if TYPE_CHECKING:
    from fastattn.models.base import ICLModel
    from fastattn.tasks.base import Task
    from fastattn.training.callbacks import Emitter
    from fastattn.training.checkpoint import Checkpointing
    from fastattn.training.trajectory import Trajectory


@dataclass(frozen=True)
class RunContext:
    """What `train` hands an engine besides the run: the checkpointing and the checkpoint's
    `identity` (the run's config), whether to show `progress`, and the `emitter` of live records."""

    checkpoint: Checkpointing | None
    identity: dict[str, Any]
    progress: bool
    emitter: Emitter


def _no_reasons(model: ICLModel, task: Task, cfg: TrainConfig) -> list[str]:
    return []


@dataclass(frozen=True)
class Engine:
    """One way to train a run.

    Attributes:
        name: its registry key. describe: one line for messages.
        methods: the `TrainConfig.method`s it serves. samplers: the samplers it serves, the first
            the one "auto" resolves to (empty: it ignores the sampler: the exact and task engines).
        models, tasks: the model and task kinds it serves (None: any).
        needs: the capabilities it needs of the model and the task.
        check: its other reasons (model, task, config) → [reason].
        run: (model, task, config, RunContext) → Trajectory; the config has the sampler resolved.
        backend: (model, task, config) → the record's `backend` (at least "engine").
        threaded: torch's threads follow the batch's size (else one thread: small ops).
    """

    name: str
    describe: str
    methods: tuple[str, ...]
    run: Callable[[ICLModel, Task, TrainConfig, RunContext], Trajectory]
    backend: Callable[[ICLModel, Task, TrainConfig], dict[str, Any]]
    samplers: tuple[str, ...] = ()
    models: tuple[str, ...] | None = None
    tasks: tuple[str, ...] | None = None
    needs: tuple[Capability, ...] = ()
    check: Callable[[ICLModel, Task, TrainConfig], list[str]] = _no_reasons
    threaded: bool = False

    def reasons(self, model: ICLModel, task: Task, cfg: TrainConfig) -> list[str]:
        """Every reason this engine cannot train `model` on `task` with `cfg` (empty: it can). A
        method it does not serve is the only reason given (the rest would not be checked)."""
        if cfg.method not in self.methods:
            return [f"method={cfg.method!r} (it trains {' or '.join(self.methods)})"]
        out = []
        if self.samplers and cfg.sampler not in self.samplers:
            out.append(f"sampler={cfg.sampler!r} (it takes {' or '.join(self.samplers)})")
        for what, kinds, obj in (("model", self.models, model), ("task", self.tasks, task)):
            if kinds is not None and obj.kind not in kinds:
                out.append(f"{what} {obj.kind!r} (it trains {what} {' or '.join(kinds)})")
        if out:
            return out
        for capability in self.needs:
            out += capability.missing(model if capability.owner == "model" else task)
        return out + self.check(model, task, cfg)


class NoEngineError(ValueError):
    """No registered engine can train a run; the message lists each engine's reasons."""


class Dispatch(NamedTuple):
    """The engine that trains a run, the run's config with its sampler resolved, and the record's
    `backend` (engine, sampler, and why faster engines did not apply)."""

    config: TrainConfig
    backend: dict[str, Any]
    engine: Engine


#: name → engine, in the order `dispatch` tries them (fastest first); `register_engine` adds one
ENGINES: dict[str, Engine] = {}


def register_engine(engine: Engine, before: str | None = None) -> Engine:
    """Add `engine` to `ENGINES`, last or just before the engine named `before`."""
    if engine.name in ENGINES:
        raise ValueError(f"engine {engine.name!r} is already registered")
    if before is not None and before not in ENGINES:
        raise ValueError(f"before={before!r} is no engine; choose one of {list(ENGINES)}")
    items = list(ENGINES.items())
    at = len(items) if before is None else list(ENGINES).index(before)
    items.insert(at, (engine.name, engine))
    ENGINES.clear()
    ENGINES.update(items)
    return engine


def dispatch(model: ICLModel, task: Task, cfg: TrainConfig) -> Dispatch:
    """The first engine of `ENGINES` that can train this run (`Engine.reasons` empty). With
    sampler "auto", the record's `backend["fallback"]` says why each faster engine "auto" could
    have picked did not apply. Raises `NoEngineError`, listing every engine's reasons, when none
    can train it."""
    passed: list[tuple[Engine, list[str]]] = []
    for engine in ENGINES.values():
        reasons = engine.reasons(model, task, cfg)
        if reasons:
            passed.append((engine, reasons))
            continue
        auto = bool(engine.samplers) and cfg.sampler == "auto"
        if auto:
            cfg = dataclasses.replace(cfg, sampler=engine.samplers[0])
        backend = engine.backend(model, task, cfg)
        skipped = [(e, r) for e, r in passed if "auto" in e.samplers]
        if auto and skipped:
            backend["fallback"] = "; ".join(f"not the {e.describe}: " + "; ".join(r)
                                            for e, r in skipped)
        return Dispatch(cfg, backend, engine)
    lines = [f"no engine can train {model.kind} on {task.kind} with sampler={cfg.sampler!r}, "
             f"method={cfg.method!r}; each engine's reasons:"]
    lines += [f"  - {e.name} ({e.describe}): " + "; ".join(r) for e, r in passed]
    raise NoEngineError("\n".join(lines))


def threads_of(engine: Engine, task: Task, cfg: TrainConfig) -> int:
    """The threads a run takes: `cfg.threads`, else one for the small ops of the exact objectives
    and the fused step, else (a threaded engine) this process's share for a large batch."""
    if cfg.threads is not None:
        return cfg.threads
    if engine.threaded:
        return default_threads((cfg.dataset_size or cfg.batch_size) * task.sequence_size)
    return 1


# ---------------------------------------------------------------------------- the engines
def _exact_reasons(model: ICLModel, task: Task, cfg: TrainConfig) -> list[str]:
    try:
        flow.objectives([model], [task], cfg.method)
    except ValueError as exc:
        return [str(exc)]
    return []


def _exact_backend(model: ICLModel, task: Task, cfg: TrainConfig) -> dict[str, Any]:
    objective = flow.objectives([model], [task], cfg.method)[0]
    backend = {"engine": f"exact population objective ({type(objective).__name__})"}
    full = population.objective_for(task, model)
    if type(full) is not type(objective):
        backend["reduction"] = (f"exact reduction of {type(full).__name__}: its flow from this "
                                "state stays on the set where the cheaper objective is exact "
                                "(reduction_at)")
    return backend


def _exact_run(model: ICLModel, task: Task, cfg: TrainConfig, ctx: RunContext) -> Trajectory:
    listen = ctx.emitter.progress if ctx.emitter.wants_progress else None
    return flow.population_runs([model], [task], cfg, progress=ctx.progress, listen=listen)[0][0]


def _fused_run(model: ICLModel, task: Task, cfg: TrainConfig, ctx: RunContext) -> Trajectory:
    return fused.train_fused([model], [task], cfg, checkpoint=ctx.checkpoint, identity=ctx.identity,
                             progress=ctx.progress, emitter=ctx.emitter)[0]


def _torch_run(model: ICLModel, task: Task, cfg: TrainConfig, ctx: RunContext) -> Trajectory:
    return sampled.train_sampled(model, task, cfg, ctx.checkpoint, ctx.identity, ctx.progress,
                                 ctx.emitter)


def _snapshot_series(model: ICLModel, task: Task, cfg: TrainConfig) -> list[str]:
    return [] if cfg.snapshot_params else SNAPSHOT_SERIES.missing(model)


def _torch_backend(model: ICLModel, task: Task, cfg: TrainConfig) -> dict[str, Any]:
    return {"engine": "torch", "sampler": cfg.sampler}


EXACT = register_engine(Engine(
    "exact", "pair's exact population objective in the C++ integrators", ("flow", "gd"),
    _exact_run, _exact_backend, check=_exact_reasons))
TASK_SGD = register_engine(Engine(
    "task_sgd", "task-centric SGD over a fixed task set", ("task_sgd",),
    lambda model, task, cfg, ctx: task_sgd.train_task_sgd(model, task, cfg),
    lambda model, task, cfg: {"engine": "torch (task-centric SGD)"},
    needs=(QUERY_LOSS_GRAD, SAMPLE_TASK)))
FUSED = register_engine(Engine(
    "fused", "fused He step", ("adam",), _fused_run,
    lambda model, task, cfg: {"engine": fused.ENGINE, "sampler": "fast", "runs_in_batch": 1},
    samplers=("fast", "auto"), models=("multihead_softmax",), tasks=("linear_regression",),
    check=fused.fast_stream_reasons))
STATS = register_engine(Engine(
    "stats", "torch step on the fused (β, x_q, y_q) sampler", ("sgd", "adam"), _torch_run,
    _torch_backend, samplers=("stats",), needs=(FORWARD_STATS, SAMPLE_STATS),
    check=_snapshot_series, threaded=True))
TORCH = register_engine(Engine(
    "torch", "torch step on the task's token tensors", ("sgd", "adam"), _torch_run,
    _torch_backend, samplers=("tokens", "auto"), check=_snapshot_series, threaded=True))
