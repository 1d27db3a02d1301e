"""Exact population training ("flow" and "gd") of (task, model) pairs, and the one path from an
integration result to a `Trajectory`, shared by `train` and the sweeps.

`population_runs` integrates K runs that share one `TrainConfig` in one call; `to_trajectory` turns
run k of the result into a `Trajectory` whose last point and last snapshot are the final state,
even when a stop (target loss, budget) fell between two record times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fastattn.training.trajectory import Trajectory

if TYPE_CHECKING:
    from fastattn.models.base import ICLModel
    from fastattn.tasks.base import Task
    from fastattn.training.trainer import TrainConfig

#: model kinds with a closed-form population loss on linear regression (until the objective
#: registry of fastattn.population names them)
_CLOSED_FORM = {"linear_regression": ("merged", "separate", "cubic_mlp")}


def _family(task: Task, model: ICLModel, method: str) -> str:
    """The population family of a (task, model) pair, or a ValueError naming the pair."""
    if model.kind not in _CLOSED_FORM.get(task.kind, ()):
        raise ValueError(f"method={method!r} needs a closed-form population objective; there is "
                         f"none for task {task.kind!r} with model {model.kind!r}: use method='sgd' "
                         "or 'adam'")
    return model.kind


def population_loss(task: Task, model: ICLModel) -> Callable[[np.ndarray], float] | None:
    """params `[P]` → the exact population loss of the pair, or None without a closed form."""
    from fastattn import population

    try:
        family = _family(task, model, "population")
    except ValueError:
        return None
    dims, moments = model.dims, task.moments()
    return lambda params: float(population.loss_and_grad(family, params, dims, moments)[0])


def log_grid(stop: float, n: int, start: float | None = None) -> np.ndarray:
    """0 followed by n log-spaced points up to `stop` (the first at `start`, default stop·1e-6)."""
    first = min(start if start is not None else stop * 1e-6, stop)
    return np.unique(np.concatenate([[0.0], np.geomspace(first, stop, n)]))


def record_steps(steps: int, n: int) -> np.ndarray:
    """About n step indices in [0, steps], log-spaced, always including 0 and `steps`."""
    return np.unique(np.concatenate([[0, steps], np.geomspace(1, steps, n).round()])).astype(int)


@dataclass(frozen=True)
class RecordPlan:
    """Where an exact run records. times: loss records `[T]`; snapshots: parameter snapshots `[S]`
    (with record_params=False only the initial and final states are kept); lr: the GD learning
    rate (steps are t/2η), None for the flow."""

    times: np.ndarray
    snapshots: np.ndarray
    record_params: bool = True
    lr: float | None = None

    @classmethod
    def of(cls, cfg: TrainConfig, n_records: int | None = None, n_params: int = 0,
           max_recorded_floats: int | None = None) -> RecordPlan:
        """The plan of a "flow" or "gd" config; `n_records` overrides cfg.n_records. Parameters are
        recorded only while n_params × (record times) stays within `max_recorded_floats`."""
        n = n_records or cfg.n_records
        if cfg.method == "gd":
            times = 2 * cfg.lr * record_steps(cfg.steps, n)
            snaps = 2 * cfg.lr * record_steps(cfg.steps, cfg.n_snapshots)
        else:
            times, snaps = log_grid(cfg.t_end, n), log_grid(cfg.t_end, cfg.n_snapshots)
        keep = max_recorded_floats is None or \
            n_params * (times.size + snaps.size) <= max_recorded_floats
        return cls(times, snaps, keep, cfg.lr if cfg.method == "gd" else None)

    @property
    def record_times(self) -> np.ndarray:
        return np.union1d(self.times, self.snapshots) if self.record_params else self.times


def integrator_options(cfg: TrainConfig) -> dict[str, Any]:
    """The integrator's method and accuracy settings of a "flow" or "gd" config."""
    if cfg.method == "gd":
        return {"method": "euler", "lr": cfg.lr, "t_end": 2 * cfg.lr * cfg.steps}
    kw = {"method": cfg.integrator, "t_end": cfg.t_end, "rtol": cfg.rtol, "atol": cfg.atol}
    if cfg.integrator == "rk4":
        kw["dt"] = cfg.dt
    return kw


def population_runs(models: Sequence[ICLModel], tasks: Sequence[Task], cfg: TrainConfig, *,
                    n_records: int | None = None, max_evals: int | None = None,
                    max_seconds: float | None = None, max_recorded_floats: int | None = None
                    ) -> tuple[list[Trajectory], Any]:
    """Integrate K runs of one family (`models[k]` on `tasks[k]`, one config) in one call.

    Each model is left holding its final state. Returns the K trajectories (wall_time is the
    call's share; config and meta are the caller's) and the integration result (counts per run).
    """
    from fastattn import population

    families = {_family(t, m, cfg.method) for m, t in zip(models, tasks, strict=True)}
    dims = {m.dims for m in models}
    if len(families) != 1 or len(dims) != 1:
        raise ValueError(f"one population call needs one family and one (D, H, R); got "
                         f"{sorted(families)} at {sorted(dims)}")
    family, shape = families.pop(), dims.pop()
    p0 = np.stack([m.to_flat() for m in models])
    plan = RecordPlan.of(cfg, n_records, p0.size, max_recorded_floats)
    single = len(models) == 1
    moments = [t.moments() for t in tasks]
    res = population.integrate(family, p0[0] if single else p0, shape,
                               moments[0] if single else moments,
                               record_times=plan.record_times, record_params=plan.record_params,
                               target_loss=cfg.target_loss, grad_tol=cfg.grad_tol,
                               max_evals=max_evals, max_seconds=max_seconds,
                               **integrator_options(cfg))
    trajs = []
    for k, (model, task) in enumerate(zip(models, tasks, strict=True)):
        traj = to_trajectory(res, plan, p0[k], population_loss(task, model),
                             index=None if single else k)
        traj.wall_time = res.wall_time / len(models)
        model.load_flat(traj.final_params)
        trajs.append(traj)
    return trajs, res


def to_trajectory(res: Any, plan: RecordPlan, params0: np.ndarray,
                  loss: Callable[[np.ndarray], float], index: int | None = None) -> Trajectory:
    """Run `index` of an integration result (None: a single-run result) as a `Trajectory`.

    Args:
        res: the integration result (times `[T]`; loss, params, final_params, status, n_evals,
            t_final per run). plan: the records it was asked for. params0: the initial state `[P]`.
        loss: params `[P]` → population loss, for a final state reached between two records.
    """
    times = np.asarray(res.times)
    if index is None:
        t, values, prm = times, np.asarray(res.loss), res.params
        final, status, n_evals, t_final = res.final_params, res.status, res.n_evals, res.t_final
    else:
        reached = ~np.isnan(res.loss[index])
        n = int(np.argmin(reached)) if not reached.all() else reached.size
        t, values = times[:n], np.asarray(res.loss[index])[:n]
        prm = None if res.params is None else res.params[index, :n]
        final, status = res.final_params[index], res.status[index]
        n_evals, t_final = res.n_evals[index], res.t_final[index]
    final = np.asarray(final)
    if t.size == 0 or float(t_final) > t[-1]:      # stopped between records: add the final state
        t, values = np.append(t, float(t_final)), np.append(values, loss(final))
        if prm is not None:
            prm = np.vstack([prm, final[None]])
    keep = np.isin(t, plan.times) | (t == t[-1])
    if plan.record_params and prm is not None:
        snap = np.isin(t, plan.snapshots) | (t == t[-1])
        s_time, params = t[snap], np.asarray(prm)[snap]
        if not np.array_equal(params[-1], final):
            s_time, params = np.append(s_time, t[-1]), np.vstack([params, final])
    else:
        s_time, params = np.array([0.0, t[-1]]), np.stack([params0, final])
    step = np.round(t / (2 * plan.lr)).astype(int) if plan.lr else np.full(t.size, -1)
    return Trajectory(time=t[keep], step=step[keep], loss=values[keep], snapshot_time=s_time,
                      params=params, status=str(status), n_evals=int(n_evals))
