"""Gradient flows of exact objectives, and the linear attention models' population loss (public face).

`integrate(objective, params0, options)` follows dθ/dt = −½ ∂L/∂θ (one GD step with learning rate η
advances t by 2η) for any `Objective`: a `LinearAttentionObjective`, one from `objective_for(task,
model)`, or a Python subclass of `Objective`. The family-name functions (`loss_and_grad(family, ...)`,
`integrate(family, params0, dims, moments, ...)`, …) are conveniences over `LinearAttentionObjective`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fastattn._core_loader import core, has_cpp
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
class IntegrationResult:
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
    if backend not in ("auto", "cpp", "torch"):
        raise ValueError(f"backend={backend!r} is unknown; use 'auto', 'cpp' or 'torch'")
    if backend == "cpp" and not has_cpp():
        raise ValueError("backend='cpp' but the compiled core is absent; rebuild or use 'torch'")
    return "cpp" if backend == "auto" and has_cpp() else ("torch" if backend == "auto" else backend)


def _moment_list(moments, K: int) -> list[Moments]:
    ms = [moments] if isinstance(moments, Moments) else list(moments)
    return ms * K if len(ms) == 1 else ms


def _objectives(objective) -> list:
    objs = list(objective) if isinstance(objective, Sequence) else [objective]
    if not objs or core is None or not all(isinstance(o, core.Objective) for o in objs):
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
    if not has_cpp():
        raise ValueError("make_evaluator needs the compiled core; rebuild fastattn")
    return LinearAttentionObjective(family, dims, moments)


# ---------------------------------------------------------------- integrate
def integrate(objective, params0, options: FlowOptions | None = None, *legacy,
              **overrides) -> IntegrationResult:
    """Integrate the gradient flow dθ/dt = −½ ∂L/∂θ from params0 to t_end (or an early stop).

    Forms:
        integrate(objective, params0, options=None, **option_overrides)
        integrate(family, params0, dims, moments, method="rk45", t_end=1.0, **option_overrides)

    Args:
        objective: an `Objective` shared by the K models, or a sequence of K (one each).
        params0: `[P]` or `[K, P]` (K independent models, each with its own adaptive step), in the
            caller's basis.
        options: a FlowOptions; keyword overrides replace its fields (or build one: t_end is required).
        family, dims, moments: a linear attention family ("merged", "cubic_mlp", "separate"), its
            dims (D, H, R) and one Moments (shared) or K: the objective(s) are built for you.
    Returns:
        IntegrationResult (with the events' crossings). See FlowOptions for the methods and stops,
        and docs/theory.md §4.
    """
    if isinstance(objective, str):
        return _integrate_family(objective, params0, options, *legacy, **overrides)
    if legacy:
        raise ValueError("integrate(objective, params0, options, **overrides) takes no further positional "
                         "arguments; pass options by name")
    opts = flow_options(options, overrides)
    objs = _objectives(objective)
    p = _params("params0", params0, objs[0].size(), f"objective {objs[0].name()}")
    return _run(objs, p, opts)


def _integrate_family(family: str, params0, dims=None, moments=None, method: str = "rk45",
                      t_end: float = 1.0, **overrides) -> IntegrationResult:
    """integrate(family, params0, dims, moments, method, t_end, **overrides): the objective(s) built
    from a family name (the older call form)."""
    family_dims(family, (1, 1, 1))
    if dims is None or moments is None:
        raise ValueError("integrate(family, params0, dims, moments, ...) needs dims and moments")
    D, H, R = family_dims(family, dims)
    p = _family_params("params0", params0, family, dims)
    K = 1 if p.ndim == 1 else p.shape[0]
    moment_arrays(moments, D, K)
    opts = flow_options(None, {"method": method, "t_end": t_end, **overrides})
    if not has_cpp():
        return _integrate_python(family, p, (D, H, R), moments, opts)
    ms = [moments] if isinstance(moments, Moments) else list(moments)
    return _run([LinearAttentionObjective(family, dims, m) for m in ms], p, opts)


def _run(objs: list, p: np.ndarray, opts: FlowOptions) -> IntegrationResult:
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
        return IntegrationResult(
            times=times[:n_rec], loss=loss[0, :n_rec],
            params=None if prm is None else prm[0, :n_rec], final_params=fin[0],
            status=out["status"][0], n_evals=int(ints[0][0]), n_steps=int(ints[1][0]),
            n_jac=int(ints[2][0]), t_final=float(out["t_final"][0]), wall_time=wall,
            n_hvp=int(ints[3][0]), n_rejected=int(ints[4][0]), events=events[0],
        )
    return IntegrationResult(
        times=times, loss=loss, params=prm, final_params=fin, status=list(out["status"]),
        n_evals=ints[0], n_steps=ints[1], n_jac=ints[2], t_final=out["t_final"], wall_time=wall,
        n_hvp=ints[3], n_rejected=ints[4], events=events,
    )


def _integrate_python(family, p, dims, moments, opts: FlowOptions) -> IntegrationResult:
    """Fallback without the C++ core: GD (method='euler') on the torch reference only."""
    if opts.method != "euler" or p.ndim != 1 or opts.events:
        raise ValueError(f"method={opts.method!r}: without the C++ core only single-model 'euler' runs "
                         "(without events)")
    lr, t_end = opts.lr, opts.t_end
    t0 = time.perf_counter()
    n_total = round(t_end / (2 * lr))
    ks = np.minimum(np.rint(opts.record_grid() / (2 * lr)).astype(np.int64), n_total)
    th = p.copy()
    losses, params = [], []
    status, k, n_evals = "t_end", 0, 0
    L, g = reference.loss_and_grad(family, th, dims, moments)
    n_evals += 1
    j = 0
    while True:
        while j < ks.size and ks[j] <= k:
            losses.append(L)
            params.append(th.copy())
            j += 1
        if opts.target_loss is not None and opts.target_loss >= L:
            status = "target_loss"
            break
        if opts.grad_tol is not None and np.linalg.norm(g) < opts.grad_tol:
            status = "converged"
            break
        if k >= n_total or (opts.max_steps and k >= opts.max_steps):
            status = "t_end" if k >= n_total else "max_steps"
            break
        if opts.max_seconds and time.perf_counter() - t0 >= opts.max_seconds:
            status = "max_seconds"
            break
        new = th - lr * g
        Ln, gn = reference.loss_and_grad(family, new, dims, moments)
        n_evals += 1
        if not (np.isfinite(Ln) and np.all(np.isfinite(gn)) and np.all(np.isfinite(new))):
            status = "diverged"
            break
        th, L, g, k = new, Ln, gn, k + 1
    n = len(losses)
    return IntegrationResult(
        times=2 * lr * ks[:n].astype(np.float64), loss=np.array(losses),
        params=np.array(params) if opts.record_params else None, final_params=th, status=status,
        n_evals=n_evals, n_steps=k, n_jac=0, t_final=2 * lr * k,
        wall_time=time.perf_counter() - t0,
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
