"""Computing one sweep run: its horizon, batched integration, measurement and result row; the
theory's part of each (predictions, horizon, measurements against it) comes from the hooks of the
paper that covers the run's (task kind, model kind) (`fastattn.sweep.hooks`). Depends only on plain
data (`RunItem`), so a run gives the same row wherever it runs; `fastattn.sweep.worker` runs batches
of them in a worker.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastattn.analysis import count_conspicuous_plateaus, find_plateaus_and_drops
from fastattn.population.stops import Stop
from fastattn.sweep.grid import canonical
from fastattn.sweep.hooks import Columns, Hooks, hooks_for
from fastattn.sweep.horizon import Horizon
from fastattn.training import Trajectory, run_config
from fastattn.training.build import build_run, build_task
from fastattn.training.flow import objectives, population_runs
from fastattn.training.records import environment

#: parameters are recorded at every loss record only below this many floats (else init + final)
MAX_RECORDED_FLOATS = 20_000_000


@dataclass
class RunItem:
    """One planned run: its key, grid point, resolved spec (horizon filled in), config columns,
    the batch it may share (compatible flow runs) and the theory's columns at planning time."""

    key: str
    point: dict[str, Any]
    spec: dict[str, dict[str, Any]]
    columns: dict[str, Any]
    batch_key: str | None = None
    theory: dict[str, Any] = field(default_factory=dict)


def run_hooks(task, model: dict[str, Any]) -> Hooks | None:
    """The hooks for the run's (task kind, model kind); None when no paper's theory covers it."""
    return hooks_for(task.kind, model["kind"])


def plan_flow(spec: dict[str, dict[str, Any]], horizon: Horizon,
              given: Mapping[str, Any] | None = None) -> tuple[dict, dict[str, Any]]:
    """Fill the flow horizon of the run's theory into a resolved spec where the grid point did not
    give it (`given`: the point's trainer values): t_end and the target loss of the pair's hooks,
    in place of the preset's (a sweep's sizes are not the paper's); the preset's t_end only where
    the hooks give none. Returns (spec, theory predictions from the init scale). Cheap: builds the
    task without rotation."""
    given = given or {}
    spec = {k: dict(v) for k, v in spec.items()}
    tr = spec["train"]
    task = build_task(dict(spec["task"], rotate=False))
    model = spec["model"]
    hooks = run_hooks(task, model)
    theory = hooks.predictions(task, model, None, horizon) if hooks else {}
    if tr.get("method", "flow") != "flow":
        return spec, theory
    t_end, target = hooks.flow_horizon(theory, horizon) if hooks else (None, None)
    if "target_loss" not in given and target is not None:
        tr["target_loss"] = target
    if "t_end" not in given and t_end is not None:
        tr["t_end"] = t_end
    if tr.get("t_end") is None:
        why = (f"no horizon from {hooks.paper}'s theory for it (a sampled model, or init scale 0)"
               if hooks else f"no theory for (task, model) = ({task.kind}, {model['kind']})")
        raise ValueError(f"flow run without --t-end and {why}; give --t-end")
    return spec, theory


def check_run(spec: dict[str, dict[str, Any]], trainer: bool = True) -> None:
    """Build the run's task (without its random rotation), model, and with `trainer` its trainer
    config and (flow, gd) exact objective, so that a bad option value or pair fails at planning
    time with the config's own message. trainer=False checks the task and model alone (before the
    horizon is planned: the theory's formulas need valid ones). Raises ValueError."""
    train = dict(spec["train"], progress=False) if trainer else {"t_end": 1.0}   # a placeholder
    task, model, cfg = build_run({"task": dict(spec["task"], rotate=False), "model": spec["model"],
                                  "train": train})
    if trainer and cfg.method in ("flow", "gd"):
        objectives([model], [task], cfg.method)


#: fields of a run that train_batched keeps per run: runs that differ only in these share a call
PER_RUN_FIELDS = {"model": ("init_seed",), "task": ("data_seed", "rotation_seed"),
                  "train": ("lr", "eval_seed")}


def batched_sampled(spec: dict[str, dict[str, Any]]) -> bool:
    """Whether a run trains with `training.batched.train_batched` (He et al. 2025's fused Adam
    step): adam on fresh batches (no fixed data set, test sets, weight decay or other loss) of
    `multihead_softmax` with the softmax activation on one fixed context length."""
    task, model, tr = spec["task"], spec["model"], spec["train"]
    return (tr.get("method") == "adam" and model["kind"] == "multihead_softmax"
            and model.get("activation", "exp") == "exp" and task["kind"] == "linear_regression"
            and isinstance(task.get("context"), int) and not tr.get("dataset_size")
            and not tr.get("test_size") and not tr.get("weight_decay") and tr.get("loss") is None
            and tr.get("target_loss") is None and tr.get("grad_tol") is None
            and not task.get("fixed_task_fraction") and not task.get("w_mean"))


def batch_key(item: RunItem) -> str | None:
    """The key of the runs `item` may share one call with: compatible flow runs (same family, sizes,
    integrator, horizon) or sampled runs of a batched trainer that differ only in per-run values
    (seeds, learning rate); None: it runs alone."""
    spec = item.spec
    tr = spec["train"]
    if tr.get("method", "flow") == "flow":
        m = spec["model"]
        return canonical({"family": m["kind"], "dim": spec["task"].get("dim"), "heads": m.get("heads"),
                          "rank": m.get("rank", 1),
                          "train": {k: v for k, v in tr.items() if k != "eval_seed"}})
    if batched_sampled(spec):
        shared = {t: {k: v for k, v in fields.items() if k not in PER_RUN_FIELDS.get(t, ())}
                  for t, fields in spec.items()}
        return canonical({"batched": "train_batched", **shared})
    return None


# ------------------------------------------------------------------------------ measuring
#: the columns `measure` writes and their kinds (the results table's schema: fastattn.sweep.schema)
MEASURED: dict[str, Any] = {
    "final_loss": float, "final_population_loss": float, "final_time": float, "n_plateaus": int,
    "n_drops": int, "n_conspicuous": int, "plateau_levels": list[float],
    "plateau_starts": list[float], "plateau_ends": list[float], "drop_times": list[float],
    "first_drop_time": float,
}


def measure(traj) -> Columns:
    """Paper-independent columns of a finished run: final loss and time, plateaus and drops;
    sampled runs of a pair with a closed form: the exact population loss of the final state."""
    t, y = np.asarray(traj.time, float), np.asarray(traj.loss, float)
    ok = (t > 0) & np.isfinite(y) & (y > 0)
    population = traj.test_loss.get("population")
    out: dict[str, Any] = {"final_loss": traj.final_loss,
                           "final_population_loss": float(population[-1])
                           if population is not None and len(population) else float("nan"),
                           "final_time": float(t[-1]) if t.size else float("nan"),
                           "n_plateaus": 0, "n_drops": 0, "n_conspicuous": 0,
                           "plateau_levels": [], "plateau_starts": [], "plateau_ends": [],
                           "drop_times": [], "first_drop_time": float("nan")}
    if ok.sum() >= 10:
        plateaus, drops = find_plateaus_and_drops(t[ok], y[ok])
        out |= {"n_plateaus": len(plateaus), "n_drops": len(drops),
                "n_conspicuous": count_conspicuous_plateaus(plateaus),
                "plateau_levels": [p.level for p in plateaus],
                "plateau_starts": [p.start for p in plateaus],
                "plateau_ends": [p.end for p in plateaus],
                "drop_times": [d.time for d in drops],
                "first_drop_time": drops[0].time if drops else float("nan")}
    return out


# ------------------------------------------------------------------------------ running
def build(item: RunItem):
    """(task, model, TrainConfig) of a run, without a progress bar; an exact flow run locates the
    events of its paper's hooks."""
    spec = {k: dict(v) for k, v in item.spec.items()}
    spec["train"]["progress"] = False
    hooks = hooks_for(spec["task"]["kind"], spec["model"]["kind"])
    if hooks and hooks.events and spec["train"].get("method", "flow") == "flow":
        spec["train"]["events"] = tuple(hooks.events(spec["task"], spec["model"]).values())
    return build_run(spec)


def event_times(item: RunItem, traj) -> dict[str, float]:
    """{event name: time of its first crossing} of the run's hooks' events (the integrators' time)."""
    hooks = hooks_for(item.spec["task"]["kind"], item.spec["model"]["kind"])
    if not (hooks and hooks.events and traj.events):
        return {}
    names = list(hooks.events(item.spec["task"], item.spec["model"]))
    out: dict[str, float] = {}
    for hit in traj.events:
        out.setdefault(names[hit.event], float(hit.t))
    return out


def flow_trajectories(items: list[RunItem], horizon: Horizon) -> tuple[list, np.ndarray, list]:
    """Integrate K compatible flow runs in one population call (`fastattn.training.flow`, the path
    `train` takes too); returns ([(trajectory, model, cost columns)] per run, initial parameters
    `[K, P]`, tasks)."""
    built = [build(it) for it in items]
    tasks = [b[0] for b in built]
    models = [b[1] for b in built]
    cfg = built[0][2]
    p0 = np.stack([m.to_flat() for m in models])
    trajs, res = population_runs(models, tasks, cfg, n_records=horizon.n_records,
                                 max_evals=horizon.max_evals, max_seconds=horizon.max_run_seconds,
                                 max_recorded_floats=MAX_RECORDED_FLOATS)
    meta = environment()
    out = []
    K = len(items)
    for k, traj in enumerate(trajs):
        traj.config = run_config(tasks[k], models[k], dataclasses.replace(cfg, progress=None))
        traj.meta = meta
        counts = {c: int(getattr(res, c) if K == 1 else getattr(res, c)[k])
                  for c in ("n_steps", "n_rejected", "n_hvp")}
        out.append((traj, models[k], {"runs_in_batch": K, "batch_wall_time": res.wall_time,
                                      "max_evals": horizon.max_evals, **counts}))
    return out, p0, tasks


def batched_trajectories(items: list[RunItem], horizon: Horizon) -> tuple[list, np.ndarray, list]:
    """Train K sampled runs that differ only in per-run values (`batch_key`) in one call of
    `training.batched.train_batched` (He et al.'s fused Adam step on the "fast" data stream: batch
    k of a run is a pure function of its data seed and k, so a run's result does not depend on
    the runs it shares the call with). Returns what `flow_trajectories` does."""
    from fastattn.training.batched import BatchedAdamConfig, train_batched

    built = [build(it) for it in items]
    tasks, models, cfgs = ([b[i] for b in built] for i in range(3))
    cfg = cfgs[0]
    p0 = np.stack([m.to_flat() for m in models])
    every = max(1, cfg.steps // max(1, horizon.n_records or cfg.n_records))
    start = time.perf_counter()
    res = train_batched(models, tasks, BatchedAdamConfig(
        lr=cfg.lr, steps=cfg.steps, batch_size=cfg.batch_size, record_every=every, stream="fast"),
        lrs=[c.lr for c in cfgs])
    wall = time.perf_counter() - start
    meta = environment()
    out = []
    for k, (task, model, c) in enumerate(built):
        loss = np.asarray(res.losses[k], dtype=float)
        final = model.to_flat()
        traj = Trajectory(time=2 * c.lr * (res.steps + 1.0), step=res.steps + 1, loss=loss,
                          snapshot_time=np.array([0.0, 2 * c.lr * c.steps]),
                          params=np.stack([p0[k], final]),
                          status=Stop.STEPS if np.all(np.isfinite(loss))
                          and np.all(np.isfinite(final)) else Stop.DIVERGED,
                          n_evals=c.steps, wall_time=wall / len(items),
                          config=run_config(task, model, dataclasses.replace(c, progress=None)),
                          meta=meta)
        out.append((traj, model, {"runs_in_batch": len(items), "batch_wall_time": wall,
                                  "backend": res.extras.get("backend"), "stream": "fast"}))
    return out, p0, tasks


def result_row(item: RunItem, traj, p0: np.ndarray | None, task, extra: dict[str, Any],
               horizon: Horizon, model=None) -> dict[str, Any]:
    """The result row of a finished run: config columns, horizon, cost, theory and measurements
    (`model`: the run's model, given to the hooks' measurements as measured["_model"])."""
    options = item.spec["model"]
    hooks = run_hooks(task, options)
    theory = hooks.predictions(task, options, p0, horizon) if hooks else {}
    measured = measure(traj) | {"_events": event_times(item, traj), "_task": task, "_model": model}
    if hooks:
        measured |= hooks.measurements(traj, theory, measured)
    measured = {k: v for k, v in measured.items() if not k.startswith("_")}
    row = {"key": item.key, **item.columns,
           "t_end": item.spec["train"].get("t_end"),
           "target_loss": item.spec["train"].get("target_loss"),
           "integrator_used": item.spec["train"].get("integrator"),
           "status": traj.status, "error": None, "n_evals": traj.n_evals,
           "wall_time": traj.wall_time, **extra, **theory, **measured}
    return row
