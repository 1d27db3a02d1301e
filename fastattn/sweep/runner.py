"""Computing one sweep run: its horizon, batched integration, measurement and result row; the
theory's part of each (predictions, horizon, measurements against it) comes from the hooks of the
paper that covers the run's (task kind, model kind) (`fastattn.sweep.hooks`). Depends only on plain
data (`RunItem`), so a run gives the same row wherever it runs; `fastattn.sweep.worker` runs batches
of them in a worker.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastattn import population
from fastattn.analysis import count_conspicuous_plateaus, find_plateaus_and_drops
from fastattn.cli_options import build_run, build_task
from fastattn.sweep.hooks import Columns, Hooks, hooks_for
from fastattn.sweep.horizon import Horizon
from fastattn.tasks import TASKS
from fastattn.training import Trajectory
from fastattn.training.records import environment, to_jsonable
from fastattn.training.trainer import log_grid

#: parameters are recorded at every loss record only below this many floats (else init + final)
MAX_RECORDED_FLOATS = 20_000_000
#: task class -> its kind (the `fastattn.tasks.TASKS` name)
TASK_KINDS = {cls: kind for kind, cls in TASKS.items()}


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
    return hooks_for(TASK_KINDS[type(task)], model["name"])


def plan_flow(spec: dict[str, dict[str, Any]], horizon: Horizon) -> tuple[dict, dict[str, Any]]:
    """Fill the flow horizon (t_end, target) of the run's theory into a resolved spec; returns
    (spec, theory predictions from the init scale). Cheap: builds the task without rotation."""
    spec = {k: dict(v) for k, v in spec.items()}
    tr = spec["train"]
    task = build_task(dict(spec["task"], rotate=False))
    model = dict(spec["model"])
    if model.get("name") in ("merged", "cubic_mlp", "softmax_merged"):
        model["rank"] = 1
    hooks = run_hooks(task, model)
    theory = hooks.predictions(task, model, None, horizon) if hooks else {}
    if tr.get("method", "flow") != "flow":
        return spec, theory
    t_end, target = hooks.flow_horizon(theory, horizon) if hooks else (None, None)
    if tr.get("target_loss") is None and target is not None:
        tr["target_loss"] = target
    if tr.get("t_end") is None:
        if t_end is None:
            why = ("no theory estimate (init scale 0?)" if hooks else
                   f"no theory for (task, model) = ({TASK_KINDS[type(task)]}, {model['name']})")
            raise ValueError(f"flow run without --time and {why}; give --time")
        tr["t_end"] = t_end
    return spec, theory


# ------------------------------------------------------------------------------ measuring
def measure(traj) -> Columns:
    """Paper-independent columns of a finished run: final loss and time, plateaus and drops."""
    t, y = np.asarray(traj.time, float), np.asarray(traj.loss, float)
    ok = (t > 0) & np.isfinite(y) & (y > 0)
    out: dict[str, Any] = {"final_loss": traj.final_loss,
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
    """(task, model, TrainConfig) of a run, without a progress bar."""
    spec = {k: dict(v) for k, v in item.spec.items()}
    spec["train"]["progress"] = False
    return build_run(spec)


def flow_trajectories(items: list[RunItem], horizon: Horizon) -> tuple[list, np.ndarray, list]:
    """Integrate K compatible flow runs in one `population.integrate` call; returns
    ([(trajectory, model, cost columns)] per run, initial parameters `[K, P]`, tasks)."""
    built = [build(it) for it in items]
    tasks = [b[0] for b in built]
    models = [b[1] for b in built]
    cfg = built[0][2]
    fam = models[0].FAMILY
    if fam is None:
        raise ValueError(f"method='flow' needs a closed-form model; {models[0].config.name} has none")
    dims = models[0].dims
    p0 = np.stack([m.to_flat() for m in models])
    times = log_grid(cfg.t_end, horizon.n_records or cfg.n_records)
    snaps = log_grid(cfg.t_end, cfg.n_snapshots)
    record_params = p0.size * (times.size + snaps.size) <= MAX_RECORDED_FLOATS
    rec = np.union1d(times, snaps) if record_params else times
    kw = {"method": cfg.integrator, "t_end": cfg.t_end, "rtol": cfg.rtol, "atol": cfg.atol}
    if cfg.integrator == "rk4":
        kw["dt"] = cfg.dt
    max_evals = horizon.max_evals
    start = time.perf_counter()
    res = population.integrate(fam, p0 if len(items) > 1 else p0[0], dims,
                               [t.moments() for t in tasks] if len(items) > 1 else tasks[0].moments(),
                               record_times=rec, record_params=record_params,
                               target_loss=cfg.target_loss, grad_tol=cfg.grad_tol,
                               max_evals=max_evals, max_seconds=horizon.max_run_seconds, **kw)
    wall = time.perf_counter() - start
    meta = environment()
    out = []
    K = len(items)
    for k in range(K):
        if K == 1:
            t, loss = np.asarray(res.times), np.asarray(res.loss)
            prm = res.params
            fin, status, n_evals = res.final_params, res.status, int(res.n_evals)
        else:
            reached = ~np.isnan(res.loss[k])
            n = int(np.argmin(reached)) if not reached.all() else reached.size
            t, loss = np.asarray(res.times)[:n], np.asarray(res.loss[k])[:n]
            prm = None if res.params is None else res.params[k, :n]
            fin, status, n_evals = res.final_params[k], res.status[k], int(res.n_evals[k])
        t_fin = float(res.t_final if K == 1 else res.t_final[k])
        if t.size == 0 or t_fin > t[-1]:       # stopped between records: add the final state
            moments = tasks[k].moments()
            t = np.append(t, t_fin)
            loss = np.append(loss, population.loss_and_grad(fam, fin, dims, moments)[0])
            if prm is not None:
                prm = np.vstack([prm, fin[None]])
        keep = np.isin(t, times) | (t == t[-1])
        if record_params and prm is not None:
            snap = np.isin(t, snaps) | (t == t[-1])
            s_time, params = t[snap], np.asarray(prm)[snap]
            if not np.array_equal(params[-1], fin):
                s_time, params = np.append(s_time, t[-1]), np.vstack([params, fin])
        else:
            s_time, params = np.array([0.0, t[-1]]), np.stack([p0[k], fin])
        models[k].load_flat(fin)
        traj = Trajectory(time=t[keep], step=np.full(int(keep.sum()), -1), loss=loss[keep],
                          snapshot_time=s_time, params=params, status=status, n_evals=n_evals,
                          wall_time=wall / K)
        traj.config = {"task": to_jsonable(tasks[k]), "model": to_jsonable(models[k].config),
                       "train": to_jsonable(dataclasses.replace(cfg, progress=None))}
        traj.meta = meta
        counts = {c: int(getattr(res, c) if K == 1 else getattr(res, c)[k])
                  for c in ("n_steps", "n_rejected", "n_hvp")}
        out.append((traj, models[k], {"batch_size": K, "batch_wall_time": wall,
                                      "max_evals": max_evals, **counts}))
    return out, p0, tasks


def result_row(item: RunItem, traj, p0: np.ndarray | None, task, extra: dict[str, Any],
               horizon: Horizon) -> dict[str, Any]:
    """The result row of a finished run: config columns, horizon, cost, theory and measurements."""
    model = item.spec["model"] | {"rank": traj.config["model"]["rank"]}
    hooks = run_hooks(task, model)
    theory = hooks.predictions(task, model, p0, horizon) if hooks else {}
    measured = measure(traj)
    if hooks:
        measured |= hooks.measurements(traj, theory, measured)
    row = {"key": item.key, **item.columns,
           "t_end": item.spec["train"].get("t_end"),
           "target_loss": item.spec["train"].get("target_loss"),
           "integrator_used": item.spec["train"].get("integrator"),
           "status": traj.status, "error": None, "n_evals": traj.n_evals,
           "wall_time": traj.wall_time, **extra, **theory, **measured}
    return row
