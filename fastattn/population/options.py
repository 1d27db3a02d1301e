"""What an integrate call asks for: `FlowOptions` (method, end time, tolerances, records, stops, events),
validated once, with an error naming the option and the fix."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

METHODS = ("euler", "rk4", "rk45", "stiff", "stiff_krylov", "stabilized", "auto")
ADAPTIVE = ("rk45", "stiff", "stiff_krylov", "stabilized", "auto")


@dataclass(frozen=True)
class CoordinateEvent:
    """Parameter `index` (in the caller's basis and flat layout) crossing `level`.

    direction: +1 upward crossings only, -1 downward only, 0 both. terminal: stop the run at the
    crossing (status "event").
    """

    index: int
    level: float
    direction: int = 0
    terminal: bool = False


@dataclass(frozen=True)
class LossEvent:
    """The loss crossing `level` (it only falls along a gradient flow: direction -1 or 0)."""

    level: float
    direction: int = 0
    terminal: bool = False


Event = CoordinateEvent | LossEvent


def _positive_or_none(name: str, value) -> None:
    if value is not None and not (isinstance(value, (int, float, np.number)) and math.isfinite(value)
                                  and value > 0):
        raise ValueError(f"{name}={value!r} must be a positive finite number (or None)")


@dataclass(frozen=True, kw_only=True)
class FlowOptions:
    """Options of `fastattn.population.integrate` (docs/theory.md §4).

    Attributes:
        method: "euler" (GD with learning rate `lr`, t = 2·lr·k), "rk4" (fixed step `dt`), "rk45"
            (Dormand–Prince 5(4)), "stiff" (Rodas4, dense Hessian), "stiff_krylov" (Rodas4, stage
            systems by MINRES on Hessian-vector products), "stabilized" (order-4 stabilized explicit
            Runge–Kutta), "auto" (rk45 while the flow is not stiff for it; "stabilized" where it is,
            with Hessian-free Rodas4 episodes where the flow has settled or the stabilized steps
            keep being rejected, while they cost less; no dense Hessian).
        t_end: the end time (required).
        lr / dt: euler's learning rate / rk4's step (required by those methods).
        rtol, atol: the adaptive methods' error tolerances (RMS norm of err / (atol + rtol·|y|)).
        h0: the adaptive methods' first step (None: chosen from the state).
        record_times: increasing times in [0, t_end] at which the loss (and, with record_params, the
            parameters) are recorded; the adaptive methods and rk4 land on them exactly, except
            "auto", which records inside its explicit steps by dense output (the loss evaluated at
            the recorded state, counted in n_evals). None: (0, t_end).
        target_loss / grad_tol: stop once L ≤ target_loss / ‖∂L/∂θ‖ < grad_tol.
        max_evals / max_steps: caps on gradient evaluations plus Hessian-vector products / accepted steps.
        max_seconds: stop a model after this much wall time (status "max_seconds"; not reproducible
            bit for bit, unlike every other stop).
        events: `CoordinateEvent` / `LossEvent` crossings, located and returned with the result.
        progress: called as progress(t, loss, n_evals) with the running model's time reached,
            loss and evaluations, at most every 0.5 s (a terminal's progress line); it cannot stop
            or change the run (its errors are ignored; Ctrl-C inside it interrupts as usual).
    """

    method: str = "auto"
    t_end: float
    lr: float | None = None
    dt: float | None = None
    rtol: float = 1e-6
    atol: float = 1e-9
    h0: float | None = None
    record_times: tuple[float, ...] | None = None
    record_params: bool = False
    target_loss: float | None = None
    grad_tol: float | None = None
    max_evals: int | None = None
    max_steps: int | None = None
    max_seconds: float | None = None
    events: tuple[Event, ...] = field(default=())
    progress: Callable[[float, float, int], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method={self.method!r} is unknown; use one of {sorted(METHODS)}")
        t_end = float(self.t_end)
        if not math.isfinite(t_end) or t_end <= 0:
            raise ValueError(f"t_end={self.t_end} must be a positive finite time")
        object.__setattr__(self, "t_end", t_end)
        if self.method == "euler":
            if self.lr is None or not math.isfinite(self.lr) or self.lr <= 0:
                raise ValueError(f"lr={self.lr} must be a positive learning rate for method='euler'")
        if self.method == "rk4":
            if self.dt is None or not math.isfinite(self.dt) or self.dt <= 0:
                raise ValueError(f"dt={self.dt} must be a positive step for method='rk4'")
        if not (self.rtol > 0 and self.atol >= 0):
            raise ValueError(f"rtol={self.rtol}, atol={self.atol}: need rtol > 0 and atol >= 0")
        _positive_or_none("h0", self.h0)
        _positive_or_none("max_seconds", self.max_seconds)
        for name in ("max_evals", "max_steps"):
            v = getattr(self, name)
            if v is not None and (int(v) != v or v < 1):
                raise ValueError(f"{name}={v!r} must be a positive integer (or None)")
        if self.record_times is not None:
            rec = np.asarray(self.record_times, dtype=np.float64).ravel()
            if rec.size == 0 or not np.all(np.isfinite(rec)) or np.any(np.diff(rec) < 0):
                raise ValueError("record_times must be a non-empty increasing sequence of finite times")
            if rec[0] < 0 or rec[-1] > t_end * (1 + 1e-12):
                raise ValueError(f"record_times must lie in [0, t_end={t_end}]")
            object.__setattr__(self, "record_times", tuple(rec.tolist()))
        events = tuple(self.events)
        for e in events:
            if not isinstance(e, (CoordinateEvent, LossEvent)):
                raise ValueError(f"events: {e!r} is not a CoordinateEvent or a LossEvent")
            if e.direction not in (-1, 0, 1) or not math.isfinite(e.level):
                raise ValueError(f"events: {e!r} needs a finite level and direction -1, 0 or +1")
            if isinstance(e, CoordinateEvent) and (int(e.index) != e.index or e.index < 0):
                raise ValueError(f"events: {e!r} needs a coordinate index >= 0")
        object.__setattr__(self, "events", events)

    def replace(self, **changes) -> FlowOptions:
        """A copy with some options changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def record_grid(self) -> np.ndarray:
        """The requested record times `[T]`."""
        return np.array((0.0, self.t_end) if self.record_times is None else self.record_times)

    def to_core(self):
        """The compiled core's `Options`."""
        from fastattn._core_loader import core

        nan = math.nan
        return core.Options(
            method=core.Method.__members__[self.method], t_end=self.t_end, lr=float(self.lr or 0.0),
            dt=float(self.dt or 0.0), rtol=float(self.rtol), atol=float(self.atol), h0=float(self.h0 or 0.0),
            record_times=list(self.record_grid()), record_params=bool(self.record_params),
            target_loss=nan if self.target_loss is None else float(self.target_loss),
            grad_tol=nan if self.grad_tol is None else float(self.grad_tol),
            max_evals=int(self.max_evals or 0), max_steps=int(self.max_steps or 0),
            max_seconds=float(self.max_seconds or 0.0),
            events=[core.Event(level=float(e.level), index=int(getattr(e, "index", -1)),
                               direction=e.direction, terminal=bool(e.terminal)) for e in self.events],
        )


def flow_options(options: FlowOptions | None, overrides: dict) -> FlowOptions:
    """`options` with `overrides` applied, or FlowOptions(**overrides); a clear error for unknown names."""
    names = {f.name for f in dataclasses.fields(FlowOptions)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; FlowOptions has {sorted(names)}")
    if options is None:
        if "t_end" not in overrides:
            raise ValueError("t_end is required: pass t_end=... or options=FlowOptions(t_end=...)")
        return FlowOptions(**overrides)
    if not isinstance(options, FlowOptions):
        raise ValueError(f"options must be a FlowOptions, got {type(options).__name__}")
    return options.replace(**overrides) if overrides else options

