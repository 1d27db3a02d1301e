"""Gradient flows of exact objectives: `integrate` and its result `FlowResult` (public face).

`integrate(objective, params0, options) -> FlowResult` follows dθ/dt = −½ ∂L/∂θ (one GD step with
learning rate η advances t by 2η) for any `Objective`: a `LinearAttentionObjective`, one from
`objective_for(task, model)`, or a Python subclass of `Objective`. The linear attention functions
(`loss_and_grad(config, ...)`, `hessian`, …) live beside `LinearAttentionObjective` in
`fastattn.population.objectives`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fastattn._core_loader import core
from fastattn.population.objectives import check_params
from fastattn.population.options import FlowOptions, flow_options
from fastattn.population.stops import Stop


@dataclass(frozen=True, eq=False)
class EventHit:
    """An event's crossing: `event` indexes FlowOptions.events; `params` `[P]` (caller's basis) at time t."""

    event: int
    t: float
    params: np.ndarray


@dataclass(frozen=True, eq=False)
class FlowResult:
    """A gradient-flow trajectory.

    Attributes:
        times: `[T]` record times actually reached (Euler: the step grid 2ηk nearest each request).
            For a single model (params0 `[P]`) truncated to the records reached before stopping; for a
            batch the full grid, with NaN losses where a model had stopped.
        loss: `[T]` (single model) or `[K, T]`.
        params: `[T, P]` or `[K, T, P]` recorded parameters (only with record_params=True), else None.
        final_params: `[P]` or `[K, P]`, the last finite state (at a terminal event: the state there).
        status: per model, why it stopped (`population.stops.Stop`: "t_end", "target_loss",
            "converged", "event", "max_evals", "max_steps", "max_seconds", "diverged",
            "step_too_small", "interrupted"; a str for a single model, else a list).
        n_evals: gradient evaluations (int or `[K]`); n_steps: accepted steps; n_jac: dense
            Hessians; n_hvp: Hessian-vector products (Hessian-free Rosenbrock steps); n_rejected:
            rejected steps of the adaptive methods.
        t_final: time of the final state (float or `[K]`).
        wall_time: seconds for the whole call.
        events: the crossings of FlowOptions.events in time order (a list of EventHit; for a batch,
            one list per model).
    """

    times: np.ndarray
    loss: np.ndarray
    params: np.ndarray | None
    final_params: np.ndarray
    status: str | list[str]
    n_evals: int | np.ndarray
    n_steps: int | np.ndarray
    n_jac: int | np.ndarray
    t_final: float | np.ndarray
    wall_time: float
    n_hvp: int | np.ndarray = 0
    n_rejected: int | np.ndarray = 0
    events: list[EventHit] | list[list[EventHit]] = ()


#: the earlier name of `FlowResult`
IntegrationResult = FlowResult


def _objectives(objective) -> list:
    objs = list(objective) if isinstance(objective, Sequence) else [objective]
    if not objs or not all(isinstance(o, core.Objective) for o in objs):
        raise ValueError("objective must be an Objective (a LinearAttentionObjective, objective_for(task, "
                         "model), or a Python subclass of fastattn.population.Objective) or a sequence "
                         "of K of them")
    return objs


# ---------------------------------------------------------------- integrate
def integrate(objective, params0, options: FlowOptions | None = None, **overrides) -> FlowResult:
    """Integrate the gradient flow dθ/dt = −½ ∂L/∂θ from params0 to t_end (or an early stop).

    Args:
        objective: an `Objective` shared by the K models, or a sequence of K (one each): e.g.
            `LinearAttentionObjective(model.config, moments)` or `objective_for(task, model)`.
        params0: `[P]` or `[K, P]` (K independent models, each with its own adaptive step), in the
            caller's basis.
        options: a FlowOptions; keyword overrides replace its fields (or build one: t_end is required).
    Returns:
        FlowResult (with the events' crossings). See FlowOptions for the methods and stops,
        and docs/theory.md §4.
    """
    opts = flow_options(options, overrides)
    objs = _objectives(objective)
    p = check_params("params0", params0, objs[0].size(), f"objective {objs[0].name()}")
    return _run(objs, p, opts)


def _run(objs: list, p: np.ndarray, opts: FlowOptions) -> FlowResult:
    t0 = time.perf_counter()
    out = core.integrate(objs[0] if len(objs) == 1 else objs, p, opts.to_core(), opts.progress)
    wall = time.perf_counter() - t0
    times = opts.record_grid()
    if opts.method == "euler":
        n_total = round(opts.t_end / (2 * opts.lr))
        times = 2 * opts.lr * np.minimum(np.rint(times / (2 * opts.lr)), n_total)
    loss, fin, prm = out["loss"], out["final_params"], out["params"]
    ints = [out[k].astype(np.int64) for k in ("n_evals", "n_steps", "n_jac", "n_hvp", "n_rejected")]
    events = [[EventHit(int(e), float(t), s) for e, t, s in hits] for hits in out["events"]]
    if p.ndim == 1:
        reached = ~np.isnan(loss[0])
        n_rec = int(np.argmin(reached)) if not reached.all() else reached.size
        return FlowResult(
            times=times[:n_rec], loss=loss[0, :n_rec],
            params=None if prm is None else prm[0, :n_rec], final_params=fin[0],
            status=Stop(out["status"][0]), n_evals=int(ints[0][0]), n_steps=int(ints[1][0]),
            n_jac=int(ints[2][0]), t_final=float(out["t_final"][0]), wall_time=wall,
            n_hvp=int(ints[3][0]), n_rejected=int(ints[4][0]), events=events[0],
        )
    return FlowResult(
        times=times, loss=loss, params=prm, final_params=fin,
        status=[Stop(w) for w in out["status"]],
        n_evals=ints[0], n_steps=ints[1], n_jac=ints[2], t_final=out["t_final"], wall_time=wall,
        n_hvp=ints[3], n_rejected=ints[4], events=events,
    )
