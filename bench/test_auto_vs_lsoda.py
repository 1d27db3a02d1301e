"""fastattn's `auto` integrator against scipy's LSODA and BDF on the separate family (issue 12, item 7).

The family: `SeparateKQ(dim=D, heads=D, rank=1, init_scale=1e-2, init_seed=3)` on
`LinearRegression(dim=D, context=64, spectrum ∝ linspace(1, 0.3, D) (trace 1), rotate=False)`, the
exact gradient flow dθ/dt = −½ ∂L/∂θ to t = 10⁷ at rtol 1e-6, atol 1e-9, P = D(1 + 2D).
`auto` runs through the public API (`fastattn.train(model, task, method="flow", ...)`, its default
400 + 40 log-spaced records included); scipy's `solve_ivp` integrates the same flow with a numpy
closed form of the gradient (`SeparateFlow`, checked against `fastattn.population.loss_and_grad`),
one thread for everything (the BLAS thread variables are set before numpy loads in script mode).

scipy's `nfev` counts the calls of the right-hand side, finite-difference Jacobian columns included;
`njev` the Jacobians. `auto`'s `n_evals` counts gradient evaluations; its dense Hessians (`n_jac`) and
Hessian-vector products (`n_hvp`) cost no gradient evaluation.

Run:  python bench/test_auto_vs_lsoda.py --dims 4,8,12,16,24,32,48,64 [--budget 600]
      python -m pytest bench/test_auto_vs_lsoda.py --benchmark-only -q   (a CI-cheap subset)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

import fastattn  # noqa: E402
from fastattn import population  # noqa: E402
from fastattn.models import SeparateKQ  # noqa: E402
from fastattn.population import Moments, linear_dims  # noqa: E402
from fastattn.tasks import LinearRegression  # noqa: E402
from fastattn.training.flow import log_grid  # noqa: E402

T_END, RTOL, ATOL = 1e7, 1e-6, 1e-9
N_RECORDS, N_SNAPSHOTS = 400, 40  # TrainConfig's defaults: the record grid `train` integrates on


def setting(D: int) -> tuple[SeparateKQ, LinearRegression]:
    """The benchmark's model and task at token dimension D."""
    spec = np.linspace(1.0, 0.3, D)
    task = LinearRegression(dim=D, context=64, spectrum=tuple(spec / spec.sum()), rotate=False)
    return SeparateKQ(dim=D, heads=D, rank=1, init_scale=1e-2, init_seed=3), task


@dataclass(frozen=True)
class SeparateFlow:
    """numpy closed form of the separate family's population loss and its gradient flow.

    L(θ) = c₀ − 2⟨Γ, A⟩ + ⟨Γ, BΓΛ⟩ with Γ = Σ_i v_i K_iᵀQ_i, A = ΛSΛ,
    B = A + c(A + tr(SΛ)Λ) + σ²cΛ, c₀ = tr(ΛS) + σ² (docs/theory.md §1); M = ∂L/∂Γ = 2(BΓΛ − A).
    Flat layout θ = [v `[H]`, K `[H, R, D]`, Q `[H, R, D]`].
    """

    D: int
    H: int
    R: int
    lam: np.ndarray  # Λ [D, D]
    A: np.ndarray    # [D, D]
    B: np.ndarray    # [D, D]
    c0: float

    @classmethod
    def from_moments(cls, m: Moments, config) -> SeparateFlow:
        """The flow of the separate model `config` on a task with moments `m`."""
        lam, S = np.asarray(m.cov, float), np.asarray(m.w_second, float)
        c, s2 = float(m.inv_n), float(m.noise)
        A = lam @ S @ lam
        B = A + c * (A + np.trace(S @ lam) * lam) + s2 * c * lam
        return cls(*linear_dims(config), lam=lam, A=A, B=B, c0=float(np.trace(lam @ S) + s2))

    def loss_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss and gradient `[P]` at θ `[P]`."""
        D, H, R = self.D, self.H, self.R
        n = H * R * D
        v = theta[:H]
        K = theta[H:H + n].reshape(H * R, D)
        Q = theta[H + n:].reshape(H * R, D)
        vr = np.repeat(v, R)
        G = (K * vr[:, None]).T @ Q                   # Γ [D, D]
        BGL = self.B @ G @ self.lam
        loss = self.c0 - 2.0 * np.vdot(G, self.A) + np.vdot(G, BGL)
        M = 2.0 * (BGL - self.A)
        MQ = Q @ M.T                                  # rows M q_j
        MtK = K @ M                                   # rows Mᵀ k_j
        grad = np.empty_like(theta)
        grad[:H] = np.einsum("jd,jd->j", K, MQ).reshape(H, R).sum(1)
        grad[H:H + n] = (vr[:, None] * MQ).ravel()
        grad[H + n:] = (vr[:, None] * MtK).ravel()
        return float(loss), grad

    def rhs(self, _t: float, theta: np.ndarray) -> np.ndarray:
        """The flow field f(θ) = −½ ∂L/∂θ."""
        return -0.5 * self.loss_grad(theta)[1]


class _OutOfTime(Exception):
    pass


def run_scipy(D: int, method: str, budget: float) -> dict:
    """solve_ivp on the numpy closed form; stops (status "budget") after `budget` seconds."""
    model, task = setting(D)
    flow = SeparateFlow.from_moments(task.moments(), model.config)
    y0 = model.to_flat().astype(np.float64)
    state = {"t": 0.0, "nfev": 0}
    start = time.perf_counter()

    def rhs(t, y):
        state["nfev"] += 1
        if state["nfev"] % 64 == 0 and time.perf_counter() - start > budget:
            raise _OutOfTime
        state["t"] = max(state["t"], t)
        return flow.rhs(t, y)

    try:
        sol = solve_ivp(rhs, (0.0, T_END), y0, method=method, rtol=RTOL, atol=ATOL)
    except _OutOfTime:
        return {"wall": time.perf_counter() - start, "nfev": state["nfev"], "njev": math.nan,
                "loss": math.nan, "status": f"budget (t = {state['t']:.2g})"}
    wall = time.perf_counter() - start
    return {"wall": wall, "nfev": sol.nfev, "njev": sol.njev, "nsteps": sol.t.size - 1,
            "loss": flow.loss_grad(sol.y[:, -1])[0], "status": "t_end" if sol.success else sol.message}


def run_auto(D: int, repeats: int = 1) -> dict:
    """`auto` through `fastattn.train` (best wall time of `repeats`), with the integrator's counts
    from `population.integrate` on the same inputs and record grid (the same run, bit for bit)."""
    walls = []
    for _ in range(repeats):
        model, task = setting(D)
        start = time.perf_counter()
        traj = fastattn.train(model, task, method="flow", t_end=T_END, rtol=RTOL, atol=ATOL)
        walls.append(time.perf_counter() - start)
    model, task = setting(D)
    grid = np.union1d(log_grid(T_END, N_RECORDS), log_grid(T_END, N_SNAPSHOTS))
    objective = population.LinearAttentionObjective(model.config, task.moments())
    res = population.integrate(objective,
                               model.to_flat(), method="auto", t_end=T_END, rtol=RTOL, atol=ATOL,
                               record_times=grid, record_params=True)
    if res.n_evals != traj.n_evals or res.loss[-1] != traj.loss[-1]:
        raise RuntimeError("train and integrate disagree: the record grid of train has changed")
    return {"wall": min(walls), "wall_integrate": res.wall_time, "n_evals": res.n_evals,
            "n_hvp": res.n_hvp, "n_jac": res.n_jac, "n_steps": res.n_steps,
            "n_rejected": res.n_rejected, "loss": float(traj.loss[-1]), "status": traj.status}


# ------------------------------------------------------------------------------- pytest (CI subset)


@pytest.mark.parametrize("D", [4, 8])
def test_numpy_closed_form_matches_the_core(D):
    model, task = setting(D)
    flow = SeparateFlow.from_moments(task.moments(), model.config)
    rng = np.random.default_rng(D)
    theta = model.to_flat() + 0.3 * rng.standard_normal(model.to_flat().size)
    L, g = flow.loss_grad(theta)
    L_ref, g_ref = population.loss_and_grad(model.config, theta, task.moments())
    assert abs(L - L_ref) <= 1e-12 * abs(L_ref)
    assert np.max(np.abs(g - g_ref)) <= 1e-12 * np.max(np.abs(g_ref))


@pytest.mark.parametrize("D", [4, 8])
def test_auto(benchmark, D):
    out = benchmark.pedantic(run_auto, args=(D,), rounds=3, iterations=1)
    benchmark.extra_info.update(out)
    assert out["status"] == "t_end"


@pytest.mark.parametrize("method", ["LSODA", "BDF"])
def test_scipy_d4(benchmark, method):
    out = benchmark.pedantic(run_scipy, args=(4, method, 60.0), rounds=1, iterations=1)
    benchmark.extra_info.update({k: v for k, v in out.items() if k != "status"})
    assert out["status"] == "t_end"


# ------------------------------------------------------------------------------------ script mode
def _fmt(x: float, spec: str = ".3g") -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _cell(r: dict | None) -> str:
    if r is None:
        return "not run"
    head = f"{r['wall']:.3g} s, {r['nfev']} / {_fmt(r['njev'], 'g')}"
    return head if r["status"] == "t_end" else f"{head} ({r['status']})"


def table(dims: list[int], budget: float, methods: list[str], repeats: int) -> None:
    torch.set_num_threads(1)
    print("| D | P | LSODA wall, nfev / njev | BDF wall, nfev / njev | auto wall | auto evals, HVPs, "
          "Hessians, steps (rejected) | LSODA / auto wall | auto / LSODA evals | "
          "final loss LSODA, auto (rel. diff) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for D in dims:
        P = D * (1 + 2 * D)
        a = run_auto(D, repeats)
        sc = {m: run_scipy(D, m, budget) for m in methods}

        ls = sc.get("LSODA")
        done = ls is not None and ls["status"] == "t_end"
        speed = f"{ls['wall'] / a['wall']:.1f}×" if done else (
            f"> {ls['wall'] / a['wall']:.0f}×" if ls else "–")
        ratio = f"{a['n_evals'] / ls['nfev']:.2f}" if done else "–"
        rel = abs(a["loss"] - ls["loss"]) / abs(ls["loss"]) if done else math.nan
        print(f"| {D} | {P} | {_cell(sc.get('LSODA'))} | {_cell(sc.get('BDF'))} | {a['wall'] * 1e3:.1f} ms "
              f"({a['wall_integrate'] * 1e3:.1f} ms integrate) | {a['n_evals']}, {a['n_hvp']}, "
              f"{a['n_jac']}, {a['n_steps']} ({a['n_rejected']}) | {speed} | {ratio} | "
              f"{_fmt(ls['loss'] if ls else math.nan, '.10g')}, {a['loss']:.10g} ({_fmt(rel, '.1e')}) |",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", default="4,8,12,16,24,32,48,64", help="comma-separated D")
    ap.add_argument("--budget", type=float, default=600.0, help="seconds per scipy run")
    ap.add_argument("--methods", default="LSODA,BDF", help="scipy methods (LSODA, BDF)")
    ap.add_argument("--repeats", type=int, default=3, help="auto: best wall time of this many")
    a = ap.parse_args()
    table([int(d) for d in a.dims.split(",")], a.budget, a.methods.split(","), a.repeats)


if __name__ == "__main__":
    main()
