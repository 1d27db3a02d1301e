"""Emergence times of Musat et al. 2025's induction-head models by exact gradient flow (spec §7,
§11; docs/musat2025.md): the first times the 3-parameter or 19-parameter flow from zero carries
α₃, β₂, γ₃ over their thresholds (Def. 1–3), located as integration events, and the GD-step
version. Times are the paper's (θ̇ = −∂L/∂θ, `theory.musat2025.PAPER_TIME_PER_CORE_TIME` per
integrator time unit); the closed forms they are checked against are in `fastattn.theory.musat2025`.
"""

from __future__ import annotations

import math

import numpy as np

from fastattn.population.api import integrate
from fastattn.population.induction import (
    NAMES,
    InductionGram19Objective,
    InductionThreeParamObjective,
    check_choice,
)
from fastattn.population.options import CoordinateEvent, FlowOptions, LossEvent
from fastattn.theory.musat2025 import PAPER_TIME_PER_CORE_TIME

__all__ = ["emergence_steps_gd", "emergence_times", "gram19_emergence_times"]


def _thresholds(thresholds) -> tuple[float, float, float]:
    t = tuple(float(x) for x in thresholds)
    if len(t) != 3 or not all(math.isfinite(x) and x > 0 for x in t):
        raise ValueError(f"thresholds={thresholds!r} must be three positive numbers (θ_γ, θ_β, θ_α)")
    return t


def _coordinate_events(thresholds) -> dict[str, tuple[int, float]]:
    tg, tb, ta = _thresholds(thresholds)
    return {"T_gamma": (2, tg), "T_beta": (1, tb), "T_alpha": (0, ta)}


def _event_times(objective, coords: dict[str, int], thresholds, loss_level, t_max: float, rtol: float,
                 atol: float, method: str, what: str) -> dict[str, float]:
    """First crossings of the coordinates `coords` (key → index) of a flow from zero, in paper time.
    Each event is terminal; the flow restarts from the located state, so a run ends at its last event."""
    tg, tb, ta = _thresholds(thresholds)
    levels = {"T_gamma": tg, "T_beta": tb, "T_alpha": ta}
    pending = {key: CoordinateEvent(index, levels[key], direction=1, terminal=True)
               for key, index in coords.items()}
    if loss_level is not None:
        pending["t_loss"] = LossEvent(float(loss_level), direction=-1, terminal=True)
    theta, t_core, out, states = np.zeros(objective.size()), 0.0, {}, {}
    while pending and 2.0 * t_max > t_core:
        keys = list(pending)
        r = integrate(objective, theta, FlowOptions(method=method, t_end=2.0 * t_max - t_core, rtol=rtol,
                                                    atol=atol, events=tuple(pending[k] for k in keys)))
        if r.status != "event":
            break
        hit = r.events[0]
        t_core += hit.t
        theta = np.asarray(hit.params, dtype=np.float64)
        out[keys[hit.event]] = t_core * PAPER_TIME_PER_CORE_TIME
        states[keys[hit.event]] = theta
        del pending[keys[hit.event]]
    if pending:
        raise ValueError(f"{what}: {sorted(pending)} not reached by t_max={t_max:g}; raise t_max")
    last = max(coords, key=lambda key: out[key])
    if any(states[last][index] < levels[key] * (1 - 1e-8) for key, index in coords.items()):
        raise ValueError(f"{what}: a coordinate fell back below its threshold before the last one "
                         "crossed; t_icl is not the latest first crossing here")
    out["t_icl"] = out[last]
    return out


def emergence_times(N: int, query: str = "last", thresholds=(0.5, 0.5, 0.5), *, mask: str = "strict",
                    loss_level: float | None = None, t_max: float | None = None, rtol: float = 1e-10,
                    atol: float = 1e-14, method: str = "rk45") -> dict[str, float]:
    """Emergence times of the 3-parameter gradient flow from zero, located as integration events.

    Args:
        N: item–label pairs; query: "last" (q = N, Theorem 2) or "uniform"; mask: "strict" / "inclusive".
        thresholds: (θ_γ, θ_β, θ_α), the levels of Def. 1–3 (Fig. 6 uses (0.5, 0.1, 0.1)).
        loss_level: also locate the first time the loss falls to this level ("t_loss").
        t_max: give up after this (paper) time; default 20 N² + 100 N.
    Returns:
        {"T_gamma", "T_beta", "T_alpha", "t_icl"} (+ "t_loss"), in the paper's time (θ̇ = −∇L).
        Each T is the first upward crossing; t_icl = max of the three, which is Def. 3's
        inf{t : all three ≥ threshold} when none has fallen back below its threshold by then (checked
        on the state located at t_icl; a ValueError otherwise).
    """
    objective = InductionThreeParamObjective(N, query, mask)
    t_max = 20.0 * N**2 + 100.0 * N if t_max is None else float(t_max)
    return _event_times(objective, {"T_gamma": 2, "T_beta": 1, "T_alpha": 0}, thresholds, loss_level, t_max,
                        rtol, atol, method, f"emergence_times(N={N})")


def gram19_emergence_times(N: int, query: str = "last", thresholds=(0.5, 0.5, 0.5), *, mask: str = "strict",
                           loss_level: float | None = None, t_max: float | None = None, rtol: float = 1e-7,
                           atol: float = 1e-12, method: str = "stabilized") -> dict[str, float]:
    """`emergence_times` of the exact 19-parameter flow (Gram space, orthonormal data, spec §11.3):
    the first times α₃, β₂, γ₃ reach their thresholds, all 19 pseudo-parameters trained. The default
    method "stabilized" is ~3× faster than rk45 here at the same event times (N = 256: 7 s vs 23 s)."""
    objective = InductionGram19Objective.orthonormal(N, query, mask)
    t_max = 20.0 * N**2 + 100.0 * N if t_max is None else float(t_max)
    coords = {key: NAMES.index(name) for key, name in
              (("T_gamma", "gamma3"), ("T_beta", "beta2"), ("T_alpha", "alpha3"))}
    return _event_times(objective, coords, thresholds, loss_level, t_max, rtol, atol, method,
                        f"gram19_emergence_times(N={N})")


def emergence_steps_gd(N: int, lr: float, thresholds=(0.5, 0.5, 0.5), *, query: str = "last",
                       mask: str = "strict", loss_level: float | None = 0.5,
                       max_steps: int | None = None) -> dict[str, int | None]:
    """First GD steps (θ ← θ − lr ∇L from zero) at which each coordinate reaches its threshold and the
    loss falls to `loss_level`: {"T_gamma", "T_beta", "T_alpha", "t_icl"(, "t_loss")} in steps.

    A coordinate that never reaches its threshold within `max_steps` is a ValueError. The loss is
    reported, not required: "t_loss" is None when it never falls to `loss_level` (a step size past
    GD's stability limit can carry all three coordinates over their thresholds and then diverge, e.g.
    N = 64 at lr = 100, whose loss never leaves the plateau).

    Runs the integrators' euler method (one step = 2·lr of their time) with the crossings located
    between steps; a crossing inside step k (from k−1 to k) counts as step k. Spec §7.7 uses
    lr = 100/256 (full-matrix learning rate 100 at D = 256).
    """
    check_choice("query", query, ("last", "uniform"))
    if not (lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr={lr!r} must be a positive learning rate")
    objective = InductionThreeParamObjective(N, query, mask)
    keys, events = [], []
    for key, (index, level) in _coordinate_events(thresholds).items():
        keys.append(key)
        events.append(CoordinateEvent(index, level, direction=1))
    if loss_level is not None:
        keys.append("t_loss")
        events.append(LossEvent(float(loss_level), direction=-1))
    max_steps = int(max_steps or math.ceil(4.0 * N**2 / lr) + 100)
    r = integrate(objective, np.zeros(3), FlowOptions(method="euler", lr=lr, t_end=2.0 * lr * max_steps,
                                                      events=tuple(events)))
    out: dict[str, int] = {}
    for hit in r.events:
        key = keys[hit.event]
        if key not in out:
            out[key] = math.ceil(hit.t / (2.0 * lr) - 1e-9)
    missing = sorted(set(keys) - set(out) - {"t_loss"})
    if missing:
        raise ValueError(f"emergence_steps_gd(N={N}, lr={lr}): {missing} not reached in {max_steps} steps "
                         f"(status {r.status!r}); raise max_steps or lower lr")
    result: dict[str, int | None] = dict(out)
    result["t_icl"] = max(out["T_gamma"], out["T_beta"], out["T_alpha"])
    if loss_level is not None:
        result["t_loss"] = out.get("t_loss")
    return result
