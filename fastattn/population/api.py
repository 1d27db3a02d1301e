"""Exact population loss, gradient, Hessian and gradient-flow integrators (public face).

Families and flat float64 layouts (docs/conventions.md), dims = (D, H, R) (R is ignored by merged):

- ``"merged"`` (ATTN_M): ``v [H]``, ``U [H, D, D]``, Γ = Σ_i v_i U_i, P = H(1 + D²).
- ``"cubic_mlp"``: ``w2 [H]``, ``W1 [H, D·D]``; same layout and Γ as merged.
- ``"separate"`` (ATTN_S, rank R): ``v [H]``, ``K [H, R, D]``, ``Q [H, R, D]``, Γ = Σ_i v_i K_iᵀ Q_i,
  P = H(1 + 2RD).

Time: gradient flow dθ/dt = −½ ∂L/∂θ; one GD step with learning rate η advances t by 2η.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fastattn._core_loader import core, has_cpp
from fastattn.models import layout
from fastattn.population import reference
from fastattn.population.moments import Moments

FAMILY_CODE = {"merged": 0, "cubic_mlp": 0, "separate": 1}
METHODS = ("euler", "rk4", "rk45", "stiff", "stiff_krylov", "stabilized", "auto")


@dataclass(frozen=True, eq=False)
class IntegrationResult:
    """A gradient-flow trajectory.

    Attributes:
        times: `[T]` record times actually reached (Euler: the step grid 2ηk nearest each request).
            For a single model (params0 `[P]`) truncated to the records reached before stopping; for a
            batch the full grid, with NaN losses where a model had stopped.
        loss: `[T]` (single model) or `[K, T]`.
        params: `[T, P]` or `[K, T, P]` recorded parameters (only with record_params=True), else None.
        final_params: `[P]` or `[K, P]`, the last finite state.
        status: per model, one of "t_end", "target_loss", "converged", "max_evals", "max_steps",
            "max_seconds", "diverged", "step_too_small", "interrupted" (a str for a single model,
            else a list).
        n_evals: gradient evaluations (int or `[K]`); n_steps: accepted steps; n_jac: dense
            Hessians; n_hvp: Hessian-vector products (Hessian-free Rosenbrock steps); n_rejected:
            rejected steps of the adaptive methods.
        t_final: time of the final state (float or `[K]`).
        wall_time: seconds for the whole call.
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


# ---------------------------------------------------------------- validation helpers
def _dims(family: str, dims) -> tuple[int, int, int]:
    if family not in FAMILY_CODE:
        raise ValueError(f"family={family!r} is unknown; use one of {sorted(FAMILY_CODE)}")
    try:
        t = tuple(int(x) for x in dims)
    except TypeError as exc:
        raise ValueError(f"dims={dims!r} must be a tuple (D, H, R) of positive ints") from exc
    if len(t) == 2 and FAMILY_CODE[family] == 0:
        t = (*t, 1)
    if len(t) != 3 or min(t) < 1:
        raise ValueError(f"dims={dims!r} must be a tuple (D, H, R) of positive ints")
    D, H, R = t
    return (D, H, 1) if FAMILY_CODE[family] == 0 else (D, H, R)


def _layout_family(family: str) -> str:
    """cubic_mlp shares the merged flat layout (w2 ≡ v, W1[h] ≡ vec U_h)."""
    return "merged" if FAMILY_CODE[family] == 0 else "separate"


def n_params(family: str, dims) -> int:
    """Flat parameter count P of a family at dims (D, H, R)."""
    return layout.n_params(family, _dims(family, dims))


def _params(name: str, params, family: str, dims) -> np.ndarray:
    p = np.ascontiguousarray(np.asarray(params, dtype=np.float64))
    P = n_params(family, dims)
    if p.ndim not in (1, 2) or p.shape[-1] != P:
        raise ValueError(
            f"{name} has shape {p.shape}, but family={family!r} with dims={tuple(dims)} needs "
            f"[P] or [K, P] with P={P}; check the family/dims or the flat layout"
        )
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} contains non-finite weights (NaN/inf); pass finite parameters")
    return p


def _moments(moments, D: int, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ms = [moments] if isinstance(moments, Moments) else list(moments)
    if not ms or not all(isinstance(m, Moments) for m in ms):
        raise ValueError("moments must be a Moments or a sequence of K Moments")
    if len(ms) not in (1, K):
        raise ValueError(f"moments: got {len(ms)} sets for K={K} models; pass 1 shared set or K")
    cov = np.stack([np.asarray(m.cov, dtype=np.float64) for m in ms])
    ws = np.stack([np.asarray(m.w_second, dtype=np.float64) for m in ms])
    if cov.shape[1:] != (D, D) or ws.shape[1:] != (D, D):
        raise ValueError(
            f"moments: cov/w_second have shape {cov.shape[1:]}/{ws.shape[1:]}, but dims give D={D}; "
            "build the Moments for the same token dimension"
        )
    noise = np.array([float(m.noise) for m in ms])
    inv_n = np.array([float(m.inv_n) for m in ms])
    if not (np.all(np.isfinite(cov)) and np.all(np.isfinite(ws)) and np.all(np.isfinite(noise))
            and np.all(np.isfinite(inv_n))):
        raise ValueError("moments contain non-finite entries")
    return cov, ws, noise, inv_n


def _backend(backend: str) -> str:
    if backend not in ("auto", "cpp", "torch"):
        raise ValueError(f"backend={backend!r} is unknown; use 'auto', 'cpp' or 'torch'")
    if backend == "cpp" and not has_cpp():
        raise ValueError("backend='cpp' but the compiled core is absent; rebuild or use 'torch'")
    return "cpp" if backend == "auto" and has_cpp() else ("torch" if backend == "auto" else backend)


def _moment_list(moments, K: int) -> list[Moments]:
    ms = [moments] if isinstance(moments, Moments) else list(moments)
    return ms * K if len(ms) == 1 else ms


# ---------------------------------------------------------------- public functions
def gamma(family: str, params, dims) -> np.ndarray:
    """Effective matrix Γ `[D, D]` (or `[K, D, D]` for params `[K, P]`), numpy."""
    b = layout.unflatten(_layout_family(family), _params("params", params, family, dims),
                         _dims(family, dims))
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
    D, H, R = _dims(family, dims)
    p = _params("params", params, family, dims)
    K = 1 if p.ndim == 1 else p.shape[0]
    cov, ws, noise, inv_n = _moments(moments, D, K)
    if _backend(backend) == "cpp":
        objs = [core.LinearAttention(family, D, H, R, cov[m], ws[m], noise[m], inv_n[m])
                for m in range(cov.shape[0])]
        pk = p.reshape(K, -1)
        if len(objs) == 1:
            loss, grad = objs[0].loss_grad(pk)
        else:
            out = [objs[k].loss_grad(pk[k]) for k in range(K)]
            loss = np.array([o[0] for o in out])
            grad = np.stack([o[1] for o in out])
    else:
        ms = _moment_list(moments, K)
        pk = p.reshape(K, -1)
        out = [reference.loss_and_grad(family, pk[k], (D, H, R), ms[k]) for k in range(K)]
        loss = np.array([o[0] for o in out])
        grad = np.stack([o[1] for o in out])
    if p.ndim == 1:
        return float(loss[0]), grad[0]
    return loss, grad


def hessian(family: str, params, dims, moments: Moments, backend: str = "auto") -> np.ndarray:
    """Dense Hessian ∂²L/∂θ² `[P, P]` of one model (params `[P]`)."""
    D, H, R = _dims(family, dims)
    p = _params("params", params, family, dims)
    if p.ndim != 1:
        raise ValueError("params must be one model [P] for hessian")
    _moments(moments, D, 1)
    if _backend(backend) == "cpp":
        return make_evaluator(family, dims, moments).hessian(p)
    return reference.hessian(family, p, (D, H, R), moments)


def hvp(family: str, params, u, dims, moments: Moments) -> np.ndarray:
    """Hessian-vector product `[P]` (C++ core)."""
    p = _params("params", params, family, dims)
    uu = np.ascontiguousarray(np.asarray(u, dtype=np.float64))
    if p.ndim != 1 or uu.shape != p.shape:
        raise ValueError(f"u must have the shape of params {p.shape}, got {uu.shape}")
    return make_evaluator(family, dims, moments).hvp(p, uu)


def make_evaluator(family: str, dims, moments: Moments):
    """A prepared C++ evaluator for repeated calls with fixed moments.

    Methods: ``loss_grad(params [P]|[K,P], eigen=False)``, ``hessian(params [P])``,
    ``hessian_diag(params [P])``, ``hvp(params, u)``, ``stage_preconditioner(params, c, r)`` (the
    Hessian-free Rodas4's preconditioner (I + c·Hb)⁻¹ r, Hb the Hessian's Gauss–Newton blocks of each
    head; docs/theory.md), ``to_eigen(params)``/``from_eigen(params)``
    (rotate to Λ's eigenbasis, where the integrators work), ``eigvecs()``.
    """
    if not has_cpp():
        raise ValueError("make_evaluator needs the compiled core; rebuild fastattn")
    D, H, R = _dims(family, dims)
    cov, ws, noise, inv_n = _moments(moments, D, 1)
    return core.LinearAttention(family, D, H, R, cov[0], ws[0], noise[0], inv_n[0])


def integrate(
    family: str,
    params0,
    dims,
    moments,
    method: str = "rk45",
    t_end: float = 1.0,
    *,
    lr: float | None = None,
    dt: float | None = None,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    h0: float | None = None,
    record_times: Sequence[float] | np.ndarray | None = None,
    record_params: bool = False,
    target_loss: float | None = None,
    grad_tol: float | None = None,
    max_evals: int | None = None,
    max_steps: int | None = None,
    max_seconds: float | None = None,
) -> IntegrationResult:
    """Integrate the gradient flow dθ/dt = −½ ∂L/∂θ from params0 to t_end (or an early stop).

    Args:
        params0: `[P]` or `[K, P]` (K independent models, each with its own adaptive step).
        moments: one Moments (shared) or K Moments.
        method: "euler" (GD with learning rate ``lr``, t = 2·lr·k), "rk4" (fixed step ``dt``),
            "rk45" (Dormand–Prince 5(4), rtol/atol), "stiff" (Rodas4, an L-stable order-4(3)
            Rosenbrock method with the analytic Jacobian −½·Hessian, one Cholesky/LU per step),
            "stiff_krylov" (the same Rodas4 Hessian-free: each stage system solved by MINRES on
            Hessian-vector products, to a residual well below the error tolerance),
            "stabilized" (an order-4 stabilized explicit Runge–Kutta method: s evaluations a
            step, stable for h·ρ(J) ≤ ≈0.35·s², so its steps are set by accuracy; no Hessian),
            "auto" (P ≤ 2000: rk45, switching to Rodas4 while the flow is stiff for the explicit
            method, e.g. after convergence; P > 2000: "stabilized", with Hessian-free Rodas4
            episodes where the flow has settled and they cost less). See docs/theory.md §4.
        record_times: increasing times in [0, t_end] at which the loss (and params) are recorded;
            adaptive methods and rk4 land on them exactly. Default: 0 and t_end.
        target_loss / grad_tol: stop when L ≤ target_loss / when ‖∂L/∂θ‖ < grad_tol.
        max_evals / max_steps: caps on gradient evaluations plus Hessian-vector products /
            accepted steps.
        max_seconds: stop a model after this many seconds of wall time (status "max_seconds"); unlike
            the other stops it depends on the machine, so such a run is not reproducible bit for bit.
    """
    D, H, R = _dims(family, dims)
    p = _params("params0", params0, family, dims)
    K = 1 if p.ndim == 1 else p.shape[0]
    cov, ws, noise, inv_n = _moments(moments, D, K)
    if method not in METHODS:
        raise ValueError(f"method={method!r} is unknown; use one of {sorted(METHODS)}")
    t_end = float(t_end)
    if not math.isfinite(t_end) or t_end <= 0:
        raise ValueError(f"t_end={t_end} must be a positive finite time")
    if method == "euler":
        if lr is None or not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"lr={lr} must be a positive learning rate for method='euler'")
    if method == "rk4":
        if dt is None or not math.isfinite(dt) or dt <= 0:
            raise ValueError(f"dt={dt} must be a positive step for method='rk4'")
    adaptive = ("rk45", "stiff", "stiff_krylov", "auto", "stabilized")
    if method in adaptive and not (rtol > 0 and atol >= 0 and rtol + atol > 0):
        raise ValueError(f"rtol={rtol}, atol={atol}: need rtol > 0 and atol >= 0")
    rec = np.array([0.0, t_end] if record_times is None else record_times, dtype=np.float64).ravel()
    if rec.size == 0 or not np.all(np.isfinite(rec)) or np.any(np.diff(rec) < 0):
        raise ValueError("record_times must be a non-empty increasing sequence of finite times")
    if rec[0] < 0 or rec[-1] > t_end * (1 + 1e-12):
        raise ValueError(f"record_times must lie in [0, t_end={t_end}]")
    if max_seconds is not None and not (math.isfinite(max_seconds) and max_seconds > 0):
        raise ValueError(f"max_seconds={max_seconds} must be a positive number of seconds (or None)")
    if not has_cpp():
        return _integrate_python(family, p, (D, H, R), moments, method, t_end, lr, rec,
                                 record_params, target_loss, grad_tol, max_steps, max_seconds)
    t0 = time.perf_counter()
    objs = [core.LinearAttention(family, D, H, R, cov[m], ws[m], noise[m], inv_n[m])
            for m in range(cov.shape[0])]
    opts = core.Options(
        method=core.Method.__members__[method], t_end=t_end, lr=float(lr or 0.0), dt=float(dt or 0.0),
        rtol=float(rtol), atol=float(atol), h0=float(h0 or 0.0), record_times=rec,
        record_params=bool(record_params),
        target_loss=math.nan if target_loss is None else float(target_loss),
        grad_tol=math.nan if grad_tol is None else float(grad_tol), max_evals=int(max_evals or 0),
        max_steps=int(max_steps or 0), max_seconds=float(max_seconds or 0.0),
    )
    out = core.integrate(objs, p, opts)
    wall = time.perf_counter() - t0
    times = rec
    if method == "euler":
        n_total = round(t_end / (2 * lr))
        times = 2 * lr * np.minimum(np.rint(rec / (2 * lr)), n_total)
    loss, fin, prm = out["loss"], out["final_params"], out["params"]
    ints = [out[k].astype(np.int64) for k in ("n_evals", "n_steps", "n_jac", "n_hvp", "n_rejected")]
    if p.ndim == 1:
        reached = ~np.isnan(loss[0])
        n_rec = int(np.argmin(reached)) if not reached.all() else reached.size
        return IntegrationResult(
            times=times[:n_rec], loss=loss[0, :n_rec],
            params=None if prm is None else prm[0, :n_rec], final_params=fin[0],
            status=out["status"][0], n_evals=int(ints[0][0]), n_steps=int(ints[1][0]),
            n_jac=int(ints[2][0]), t_final=float(out["t_final"][0]), wall_time=wall,
            n_hvp=int(ints[3][0]), n_rejected=int(ints[4][0]),
        )
    return IntegrationResult(
        times=times, loss=loss, params=prm, final_params=fin, status=list(out["status"]),
        n_evals=ints[0], n_steps=ints[1], n_jac=ints[2], t_final=out["t_final"], wall_time=wall,
        n_hvp=ints[3], n_rejected=ints[4],
    )


def _integrate_python(family, p, dims, moments, method, t_end, lr, rec, record_params,
                      target_loss, grad_tol, max_steps, max_seconds) -> IntegrationResult:
    """Fallback without the C++ core: GD (method='euler') on the torch reference only."""
    if method != "euler" or p.ndim != 1:
        raise ValueError(f"method={method!r}: without the C++ core only single-model 'euler' runs")
    t0 = time.perf_counter()
    n_total = round(t_end / (2 * lr))
    ks = np.minimum(np.rint(rec / (2 * lr)).astype(np.int64), n_total)
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
        if target_loss is not None and target_loss >= L:
            status = "target_loss"
            break
        if grad_tol is not None and np.linalg.norm(g) < grad_tol:
            status = "converged"
            break
        if k >= n_total or (max_steps and k >= max_steps):
            status = "t_end" if k >= n_total else "max_steps"
            break
        if max_seconds and time.perf_counter() - t0 >= max_seconds:
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
        params=np.array(params) if record_params else None, final_params=th, status=status,
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
    b = layout.unflatten(_layout_family(family), params_over_time, _dims(family, dims))
    if "U" in b:
        v, W1 = b["v"], b["U"].reshape(*b["U"].shape[:-2], -1)      # W1 [..., H, D²]
        return {"w2w2T_minus_W1W1T": v[..., :, None] * v[..., None, :]
                - np.einsum("...ia,...ja->...ij", W1, W1)}
    kk = (b["K"] ** 2).sum(-1)
    return {"k_minus_q": kk - (b["Q"] ** 2).sum(-1), "k_minus_v": kk.sum(-1) - b["v"] ** 2}
