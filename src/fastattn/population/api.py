"""Gradient flows of exact objectives, and the linear attention models' population loss (public face).

`integrate(objective, params0, options) -> FlowResult` follows dθ/dt = −½ ∂L/∂θ (one GD step with
learning rate η advances t by 2η) for any `Objective`: a `LinearAttentionObjective`, one from
`objective_for(task, model)`, or a Python subclass of `Objective`. The family-name functions
(`loss_and_grad(family, ...)`, `hessian`, …) are conveniences over `LinearAttentionObjective`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fastattn._core_loader import core
from fastattn.models import layout
from fastattn.population import reference
from fastattn.population.moments import Moments
from fastattn.population.objectives import (
    LinearAttentionObjective,
    family_dims,
    layout_family,
    moment_arrays,
)
from fastattn.population.options import FlowOptions, flow_options


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
        status: per model, one of "t_end", "target_loss", "converged", "event", "max_evals",
            "max_steps", "max_seconds", "diverged", "step_too_small", "interrupted" (a str for a
            single model, else a list).
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


# ---------------------------------------------------------------- validation helpers
def _params(name: str, params, P: int, what: str) -> np.ndarray:
    p = np.ascontiguousarray(np.asarray(params, dtype=np.float64))
    if p.ndim not in (1, 2) or p.shape[-1] != P:
        raise ValueError(f"{name} has shape {p.shape}, but {what} needs [P] or [K, P] with P={P}; "
                         "check the objective or the flat layout")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} contains non-finite weights (NaN/inf); pass finite parameters")
    return p


def _family_params(name: str, params, family: str, dims) -> np.ndarray:
    return _params(name, params, n_params(family, dims), f"family={family!r} with dims={tuple(dims)}")


def _backend(backend: str) -> str:
    """"cpp" (the compiled core; "auto" picks it) or "torch" (the float64 torch reference)."""
    if backend not in ("auto", "cpp", "torch"):
        raise ValueError(f"backend={backend!r} is unknown; use 'auto', 'cpp' or 'torch'")
    return "cpp" if backend == "auto" else backend


def _moment_list(moments, K: int) -> list[Moments]:
    ms = [moments] if isinstance(moments, Moments) else list(moments)
    return ms * K if len(ms) == 1 else ms


def _objectives(objective) -> list:
    objs = list(objective) if isinstance(objective, Sequence) else [objective]
    if not objs or not all(isinstance(o, core.Objective) for o in objs):
        raise ValueError("objective must be an Objective (a LinearAttentionObjective, objective_for(task, "
                         "model), or a Python subclass of fastattn.population.Objective) or a sequence "
                         "of K of them")
    return objs


# ---------------------------------------------------------------- the linear attention models
def n_params(family: str, dims) -> int:
    """Flat parameter count P of a family at dims (D, H, R)."""
    return layout.n_params(family, family_dims(family, dims))


def gamma(family: str, params, dims) -> np.ndarray:
    """Effective matrix Γ `[D, D]` (or `[K, D, D]` for params `[K, P]`), numpy."""
    b = layout.unflatten(layout_family(family), _family_params("params", params, family, dims),
                         family_dims(family, dims))
    if "U" in b:
        return np.einsum("...i,...iab->...ab", b["v"], b["U"])
    return np.einsum("...i,...ira,...irb->...ab", b["v"], b["K"], b["Q"])


def loss_and_grad(family: str, params, dims, moments, backend: str = "auto"):
    """Population loss and gradient ∂L/∂θ.

    Args:
        params: `[P]` or `[K, P]` flat float64 parameters.
        moments: one Moments (shared) or a sequence of K Moments.
    Returns:
        (loss, grad): a float and `[P]` for params `[P]`; `[K]` and `[K, P]` for `[K, P]`.
    """
    D, H, R = family_dims(family, dims)
    p = _family_params("params", params, family, dims)
    K = 1 if p.ndim == 1 else p.shape[0]
    moment_arrays(moments, D, K)
    ms = _moment_list(moments, K)
    pk = p.reshape(K, -1)
    if _backend(backend) == "cpp":
        if isinstance(moments, Moments):
            loss, grad = LinearAttentionObjective(family, dims, moments).loss_grad(pk)
        else:
            out = [LinearAttentionObjective(family, dims, ms[k]).loss_grad(pk[k]) for k in range(K)]
            loss, grad = np.array([o[0] for o in out]), np.stack([o[1] for o in out])
    else:
        out = [reference.loss_and_grad(family, pk[k], (D, H, R), ms[k]) for k in range(K)]
        loss, grad = np.array([o[0] for o in out]), np.stack([o[1] for o in out])
    if p.ndim == 1:
        return float(loss[0]), grad[0]
    return loss, grad


def hessian(family: str, params, dims, moments: Moments, backend: str = "auto") -> np.ndarray:
    """Dense Hessian ∂²L/∂θ² `[P, P]` of one model (params `[P]`)."""
    D, H, R = family_dims(family, dims)
    p = _family_params("params", params, family, dims)
    if p.ndim != 1:
        raise ValueError("params must be one model [P] for hessian")
    moment_arrays(moments, D, 1)
    if _backend(backend) == "cpp":
        return make_evaluator(family, dims, moments).hessian(p)
    return reference.hessian(family, p, (D, H, R), moments)


def hvp(family: str, params, u, dims, moments: Moments) -> np.ndarray:
    """Hessian-vector product `[P]` (C++ core)."""
    p = _family_params("params", params, family, dims)
    uu = np.ascontiguousarray(np.asarray(u, dtype=np.float64))
    if p.ndim != 1 or uu.shape != p.shape:
        raise ValueError(f"u must have the shape of params {p.shape}, got {uu.shape}")
    return make_evaluator(family, dims, moments).hvp(p, uu)


def make_evaluator(family: str, dims, moments: Moments) -> LinearAttentionObjective:
    """The C++ objective of a linear attention family with fixed moments (for repeated calls); see
    LinearAttentionObjective for its methods."""
    return LinearAttentionObjective(family, dims, moments)


# ---------------------------------------------------------------- integrate
def integrate(objective, params0, options: FlowOptions | None = None, **overrides) -> FlowResult:
    """Integrate the gradient flow dθ/dt = −½ ∂L/∂θ from params0 to t_end (or an early stop).

    Args:
        objective: an `Objective` shared by the K models, or a sequence of K (one each): e.g.
            `LinearAttentionObjective(family, dims, moments)` or `objective_for(task, model)`.
        params0: `[P]` or `[K, P]` (K independent models, each with its own adaptive step), in the
            caller's basis.
        options: a FlowOptions; keyword overrides replace its fields (or build one: t_end is required).
    Returns:
        FlowResult (with the events' crossings). See FlowOptions for the methods and stops,
        and docs/theory.md §4.
    """
    opts = flow_options(options, overrides)
    objs = _objectives(objective)
    p = _params("params0", params0, objs[0].size(), f"objective {objs[0].name()}")
    return _run(objs, p, opts)


def _run(objs: list, p: np.ndarray, opts: FlowOptions) -> FlowResult:
    t0 = time.perf_counter()
    out = core.integrate(objs[0] if len(objs) == 1 else objs, p, opts.to_core())
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
            status=out["status"][0], n_evals=int(ints[0][0]), n_steps=int(ints[1][0]),
            n_jac=int(ints[2][0]), t_final=float(out["t_final"][0]), wall_time=wall,
            n_hvp=int(ints[3][0]), n_rejected=int(ints[4][0]), events=events[0],
        )
    return FlowResult(
        times=times, loss=loss, params=prm, final_params=fin, status=list(out["status"]),
        n_evals=ints[0], n_steps=ints[1], n_jac=ints[2], t_final=out["t_final"], wall_time=wall,
        n_hvp=ints[3], n_rejected=ints[4], events=events,
    )


def conserved_quantities(family: str, params_over_time, dims) -> dict[str, np.ndarray]:
    """Quantities conserved by the gradient flow (any loss), for diagnostics.

    Args:
        params_over_time: `[..., P]` (e.g. `[T, P]`).
    Returns:
        merged/cubic_mlp: {"w2w2T_minus_W1W1T": `[..., H, H]`} (Eq. 55: w₂w₂ᵀ − W₁W₁ᵀ).
        separate: {"k_minus_q": `[..., H, R]` = ‖k_ir‖² − ‖q_ir‖²,
                   "k_minus_v": `[..., H]` = Σ_r ‖k_ir‖² − v_i²} (Eq. 89).
    """
    b = layout.unflatten(layout_family(family), params_over_time, family_dims(family, dims))
    if "U" in b:
        v, W1 = b["v"], b["U"].reshape(*b["U"].shape[:-2], -1)      # W1 [..., H, D²]
        return {"w2w2T_minus_W1W1T": v[..., :, None] * v[..., None, :]
                - np.einsum("...ia,...ja->...ij", W1, W1)}
    kk = (b["K"] ** 2).sum(-1)
    return {"k_minus_q": kk - (b["Q"] ** 2).sum(-1), "k_minus_v": kk.sum(-1) - b["v"] ** 2}
