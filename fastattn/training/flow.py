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

from fastattn import population
from fastattn.population.stops import stop_of
from fastattn.training.trajectory import Trajectory

if TYPE_CHECKING:
    from fastattn.models.base import ICLModel
    from fastattn.tasks.base import Task
    from fastattn.training.config import TrainConfig


def objectives(models: Sequence[ICLModel], tasks: Sequence[Task], method: str) -> list[Any]:
    """The exact population objective of each (task, model) pair (`population.objective_for`), or
    a ValueError naming the method and the pair that has none. An objective with an exact
    reduction at the model's state (`reduction_at(params)`: a cheaper objective whose flow from
    there is the same, e.g. the full Wishart model on its invariant set p1 = q2 = 0) gives it."""
    try:
        objs = [population.objective_for(t, m) for m, t in zip(models, tasks, strict=True)]
    except ValueError as exc:
        raise ValueError(f"method={method!r} trains the exact population objective: {exc}") from None
    out = []
    for obj, model in zip(objs, models, strict=True):
        reduce = getattr(obj, "reduction_at", None)
        reduced = reduce(model.to_flat()) if reduce is not None else None
        out.append(reduced if reduced is not None else obj)
    return out


def population_loss(task: Task, model: ICLModel) -> Callable[[np.ndarray], float] | None:
    """params `[P]` → the exact population loss of the pair, or None without a closed form; NaN
    at a state where the objective has none (it refuses it: the full disentangled model off
    Theorem 1's subspace, where sampled training takes it)."""
    try:
        objective = population.objective_for(task, model)
    except ValueError:
        return None

    def loss(params: np.ndarray) -> float:
        try:
            return float(objective.loss_grad(params)[0])
        except ValueError:
            return float("nan")
    return loss


def log_grid(stop: float, n: int, start: float | None = None) -> np.ndarray:
    """0 followed by n log-spaced points up to `stop` (the first at `start`, default stop·1e-6)."""
    first = min(start if start is not None else stop * 1e-6, stop)
    return np.unique(np.concatenate([[0.0], np.geomspace(first, stop, n)]))


def record_steps(steps: int, n: int, every: int | None = None) -> np.ndarray:
    """About n step indices in [0, steps], log-spaced (`every`: every `every`-th step instead),
    always including 0 and `steps`."""
    grid = np.arange(0, steps, every) if every else np.geomspace(1, steps, n).round()
    return np.unique(np.concatenate([[0, steps], grid])).astype(int)


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
            times = 2 * cfg.lr * record_steps(cfg.steps, n, cfg.record_every)
            snaps = 2 * cfg.lr * record_steps(cfg.steps, cfg.n_snapshots, cfg.snapshot_every)
        else:
            times, snaps = log_grid(cfg.t_end, n), log_grid(cfg.t_end, cfg.n_snapshots)
        keep = max_recorded_floats is None or \
            n_params * (times.size + snaps.size) <= max_recorded_floats
        return cls(times, snaps, keep, cfg.lr if cfg.method == "gd" else None)

    @property
    def record_times(self) -> np.ndarray:
        return np.union1d(self.times, self.snapshots) if self.record_params else self.times


class FlowProgress:
    """A terminal progress line of an exact run: time reached, loss and evaluations, rewritten in
    place on stderr (`population.FlowOptions.progress`); `close` ends the line."""

    def __init__(self, label: str, t_end: float):
        self.label, self.t_end, self.shown = label, t_end, False

    def __call__(self, t: float, loss: float, n_evals: int) -> None:
        import sys

        sys.stderr.write(f"\r{self.label}: t = {t:.4g} / {self.t_end:.4g}, loss = {loss:.6g}, "
                         f"{n_evals} evaluations ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            import sys

            sys.stderr.write("\n")
            sys.stderr.flush()


def flow_options(cfg: TrainConfig, plan: RecordPlan, **limits: Any) -> population.FlowOptions:
    """The `FlowOptions` of a "flow" or "gd" config recording at `plan`; `limits` adds stops
    (max_evals, max_seconds, ...)."""
    if cfg.method == "gd":
        method = {"method": "euler", "lr": cfg.lr, "t_end": 2 * cfg.lr * cfg.steps}
    else:
        method = {"method": cfg.integrator, "t_end": cfg.t_end, "rtol": cfg.rtol, "atol": cfg.atol,
                  "dt": cfg.dt}
    return population.FlowOptions(**method, record_times=tuple(plan.record_times),
                                  record_params=plan.record_params, target_loss=cfg.target_loss,
                                  grad_tol=cfg.grad_tol, events=cfg.events, **limits)


def population_runs(models: Sequence[ICLModel], tasks: Sequence[Task], cfg: TrainConfig, *,
                    n_records: int | None = None, max_evals: int | None = None,
                    max_seconds: float | None = None, max_recorded_floats: int | None = None,
                    progress: bool = False, objs: Sequence[Any] | None = None,
                    listen: Callable[[float, float, int], None] | None = None
                    ) -> tuple[list[Trajectory], population.IntegrationResult]:
    """Integrate K runs (`models[k]` on `tasks[k]`, one config, one flat size P) in one call;
    `progress`: show a progress line on stderr (time reached, loss, evaluations); `listen`: also
    called as listen(t, loss, n_evals) while the integration runs (live logging). `objs`: the K
    objectives to integrate instead of the pairs' exact ones (`objectives`), over the models' flat
    layouts (e.g. an approximate loss that is no pair's population loss).

    Each model is left holding its final state. Returns the K trajectories (wall_time is the
    call's share; config and meta are the caller's) and the integration result (counts per run).
    """
    objs = list(objs) if objs is not None else objectives(models, tasks, cfg.method)
    p0 = np.stack([m.to_flat() for m in models])
    plan = RecordPlan.of(cfg, n_records, p0.size, max_recorded_floats)
    t_end = cfg.t_end if cfg.method == "flow" else 2 * cfg.lr * cfg.steps
    line = FlowProgress(f"{cfg.method} {models[0].kind}", t_end) if progress else None
    hooks = [h for h in (line, listen) if h is not None]

    def report(t: float, loss: float, n_evals: int) -> None:
        for hook in hooks:
            hook(t, loss, n_evals)
    options = flow_options(cfg, plan, max_evals=max_evals, max_seconds=max_seconds,
                           progress=report if hooks else None)
    single = len(models) == 1
    try:
        res = population.integrate(objs[0] if single else objs, p0[0] if single else p0, options)
    finally:
        if line is not None:
            line.close()
    trajs = []
    for k, (model, objective) in enumerate(zip(models, objs, strict=True)):
        traj = to_trajectory(res, plan, p0[k], lambda p, o=objective: float(o.loss_grad(p)[0]),
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
            t_final, events per run). plan: the records it was asked for. params0: the initial
            state `[P]`.
        loss: params `[P]` → population loss, for a final state reached between two records.
    """
    times = np.asarray(res.times)
    if index is None:
        t, values, prm = times, np.asarray(res.loss), res.params
        final, status, n_evals, t_final = res.final_params, res.status, res.n_evals, res.t_final
        events = res.events
    else:
        reached = ~np.isnan(res.loss[index])
        n = int(np.argmin(reached)) if not reached.all() else reached.size
        t, values = times[:n], np.asarray(res.loss[index])[:n]
        prm = None if res.params is None else res.params[index, :n]
        final, status = res.final_params[index], res.status[index]
        n_evals, t_final = res.n_evals[index], res.t_final[index]
        events = res.events[index]
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
                      params=params, events=list(events),
                      status=stop_of(status, steps=plan.lr is not None),
                      n_evals=int(n_evals))
