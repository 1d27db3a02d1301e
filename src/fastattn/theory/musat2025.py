"""Theory of Musat et al. 2025, "On the Emergence of Induction Heads for In-Context Learning"
(arXiv 2511.01033): the 3-parameter model (α₃, β₂, γ₃) of Theorem 2, its emergence times by exact
gradient flow, Theorem 2's bounds and the sharper asymptotics of spec §7.6 / §11.4.

Conventions (the paper's, spec §4 and §7): the loss is ‖y − ỹ‖² summed over the output
coordinates (1 at zero weights, orthonormal data); time is gradient-flow time at unit learning
rate, θ̇ = −∂L/∂θ. The library's integrators follow dθ/dt = −½ ∂L/∂θ, so every time here is half
the integrators' time (`PAPER_TIME_PER_CORE_TIME`), and a GD step with learning rate η advances the
paper's time by η. Emergence (Def. 1–3): T_x = inf{t : x(t) ≥ threshold}; t_ICL = inf{t : all three
≥ their thresholds}. Note that t_ICL is **not** the loss drop: at t_ICL the loss is still on its
plateau 1 − 1/(2N); it falls below ½ only at ≈ 1.46 t_ICL (q = N).
"""

from __future__ import annotations

import math

import numpy as np

from fastattn.models.disentangled import NAMES
from fastattn.population.induction import InductionGram19Objective, InductionThreeParamObjective, check_choice
from fastattn.population.options import CoordinateEvent, FlowOptions, LossEvent

__all__ = [
    "PAPER_TIME_PER_CORE_TIME",
    "asymptotic_times",
    "emergence_steps_gd",
    "emergence_times",
    "gram19_emergence_times",
    "loss_collapse_time",
    "plateau_loss",
    "theorem2_bounds",
    "three_param_loss",
    "three_param_rhs",
    "uniform_query_t_icl",
]

PAPER_TIME_PER_CORE_TIME = 0.5
SQRT_2PI = math.sqrt(2.0 * math.pi)


# --------------------------------------------------------------------------------------------
# closed forms of the 3-parameter model (q = N, strict mask)
def three_param_loss(alpha, beta, gamma, N):
    """The loss of spec §7.3 in the paper's (unstable) form: s = exp(β e^α / (e^α + 2N − 2)),
    L = γ² (s² + F)/(s + F)² − 2γ s/(s + F) + 1, F = 2N − 1. Arrays broadcast."""
    a, b, g = (np.asarray(x, dtype=np.float64) for x in (alpha, beta, gamma))
    F = 2.0 * N - 1.0
    s = np.exp(b * np.exp(a) / (np.exp(a) + 2.0 * N - 2.0))
    return g**2 * (s**2 + F) / (s + F) ** 2 - 2.0 * g * s / (s + F) + 1.0


def three_param_rhs(alpha, beta, gamma, N):
    """(α̇, β̇, γ̇) = −∇L of the paper's gradient-flow ODE (spec §7.3, B.5), as printed."""
    a, b, g = (np.asarray(x, dtype=np.float64) for x in (alpha, beta, gamma))
    F = 2.0 * N - 1.0
    G = np.exp(a) + 2.0 * N - 2.0
    s = np.exp(b * np.exp(a) / G)
    common = g / (s + F) ** 2 - g**2 * (s - 1.0) / (s + F) ** 3
    beta_dot = 2.0 * F * s * np.exp(a) / G * common
    alpha_dot = 2.0 * b * (2.0 * N - 2.0) * F * s * np.exp(a) / G**2 * common
    gamma_dot = 2.0 * s / (s + F) - 2.0 * g * (s**2 + F) / (s + F) ** 2
    return alpha_dot, beta_dot, gamma_dot


def plateau_loss(N):
    """The loss on the plateau after γ emerged (γ = 1, s = 1): 1 − 1/(2N)."""
    return 1.0 - 0.5 / np.asarray(N, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# bounds and asymptotics
def theorem2_bounds(N) -> dict[str, tuple[float, float]]:
    """Leading-order bounds of Theorem 2's proof (App. B.6–B.8), as (lower, upper) intervals.

    Phase 1: 1/(2N) ≤ γ̇ ≤ 1/N while α, β, γ < ½, so T_γ = T₁ ∈ [N/2, N].
    Phase 2 (γ ∈ [½, 3/2], α, β ≤ ½): β̇ = 2γe^α/(4N²) ∈ [1/(4N²), 3√e/(4N²)] (our reading of
    B.7.2, which states Θ(1/N²) only), so T₂ ∈ [2N²/(3√e), 2N²].
    Phase 3: α̇ > 1/(8N²), so T₃ < 4N²; β stays below ½ + 3√e < 20 there.
    Returns T1, T2, T3 and the totals T_gamma = T1, T_beta = T1 + T2, T_alpha = T1 + T2 + T3
    (the paper's App. B.1 mislabels these totals).
    """
    N = float(N)
    T1 = (N / 2.0, N)
    T2 = (2.0 * N**2 / (3.0 * math.sqrt(math.e)), 2.0 * N**2)
    T3 = (0.0, 4.0 * N**2)
    return {
        "T1": T1, "T2": T2, "T3": T3,
        "T_gamma": T1,
        "T_beta": (T1[0] + T2[0], T1[1] + T2[1]),
        "T_alpha": (T1[0] + T2[0], T1[1] + T2[1] + T3[1]),
        "beta_at_T_alpha_max": (0.0, 0.5 + 3.0 * math.sqrt(math.e)),
    }


# next-order coefficients fitted for N ≥ 512 (spec §7.6), thresholds ½ only
_SECOND_ORDER = {"T_beta": 0.790, "T_alpha": 0.682}


def asymptotic_times(N, thresholds=(0.5, 0.5, 0.5), two_term: bool = True) -> dict[str, float]:
    """Large-N emergence times (spec §7.6): γ ≈ 1 − e^{−t/N}, α = β²/2, dβ/dτ = e^{β²/2}, τ = t/(2N²):
    T_γ ≈ −N ln(1 − θ_γ), T_β ≈ √(2π) erf(θ_β/√2) N², T_α ≈ √(2π) erf(√θ_α) N².

    thresholds = (θ_γ, θ_β, θ_α). two_term adds the fitted O(N) terms (0.790 N, 0.682 N), known only
    for θ = ½. t_icl is the largest of the three.
    """
    tg, tb, ta = (float(x) for x in thresholds)
    if not (0 < tg < 1 and tb > 0 and ta > 0):
        raise ValueError(f"thresholds={thresholds!r}: need 0 < θ_γ < 1 and θ_β, θ_α > 0")
    N = float(N)
    out = {
        "T_gamma": -N * math.log1p(-tg),
        "T_beta": SQRT_2PI * math.erf(tb / math.sqrt(2.0)) * N**2,
        "T_alpha": SQRT_2PI * math.erf(math.sqrt(ta)) * N**2,
    }
    if two_term:
        for key, theta in (("T_beta", tb), ("T_alpha", ta)):
            if theta == 0.5:
                out[key] += _SECOND_ORDER[key] * N
    out["t_icl"] = max(out.values())
    return out


def loss_collapse_time(N):
    """Leading-order blow-up time of β (loss collapse, spec §7.6): √(2π) N²."""
    return SQRT_2PI * np.asarray(N, dtype=np.float64) ** 2


def uniform_query_t_icl(N):
    """Fit of t_ICL for q ~ Unif{1..N} (spec §11.4, within 0.3 % on N = 64..512): N²/(0.622 ln N + 0.143)."""
    N = np.asarray(N, dtype=np.float64)
    return N**2 / (0.622 * np.log(N) + 0.143)


# --------------------------------------------------------------------------------------------
# exact flows of the 3-parameter model
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
    from fastattn.population.api import integrate

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
    from fastattn.population.api import integrate

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
