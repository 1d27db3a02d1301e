"""Evaluations and wall time vs t for each integrator.

Settings: (fig3) Zhang Fig. 3, separate D=4, H=5, R=1, λ=(.4,.3,.2,.1) rotated, N=31, init 1e-3;
(rank) separate D=8, H=9, R=4, λ∝1/d (trace 1), N=31, App. C.2 init 1e-2 (Fig. 4);
(white) merged Λ=I, D=4, H=8, N=31, aligned init 1e-3: max |L − closed form| over t ∈ [0, 20];
(large) separate rank 1, H = D ∈ {32, 64} (P = 2080, 8256 > 2000: auto is Hessian-free), linear
spectrum, N ∈ {512, 2048}, init 1e-2·√D: evaluations, HVPs and wall time to L ≤ 1.05·L* (--methods,
e.g. rk45,auto,stabilized,stiff_krylov; not part of "all": rk45 needs minutes to hours, capped by
--max-evals).

Run: python bench/population_table.py [--setting fig3|rank|white|large|all] [--init-scale 1e-3] [--seed 0]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import fastattn
from fastattn.cli_options import Renamed
from fastattn.experiments.zhang2025 import fig3_setting
from fastattn.models import SeparateKQ
from fastattn.models.linear_attention import MergedConfig, SeparateConfig
from fastattn.population import LinearAttentionObjective, Moments, integrate
from fastattn.tasks import LinearRegression
from fastattn.theory.zhang2025 import minimum_loss, white_merged_loss

METHODS = ("rk45", "stiff", "auto", "rk4", "euler")


def fig3(init: float, seed: int = 0):
    task, model = fig3_setting(init, seed)
    lstar = minimum_loss(task.eigvals, task.inv_context_mean())
    return model.config, task.moments(), model.to_flat(), lstar


def rank_setting(init: float = 1e-2, seed: int = 0, R: int = 4):
    rng = np.random.default_rng(seed)
    D, H = 8, 9
    lam = 1 / np.arange(1, D + 1)
    lam /= lam.sum()
    m = Moments(cov=np.diag(lam), w_second=np.eye(D), noise=0.0, inv_n=1 / 31)
    theta = np.concatenate([rng.normal(0, init / np.sqrt(H), H),
                            rng.normal(0, init / np.sqrt(H * R * D), 2 * H * R * D)])
    lstar = lam.sum() - np.sum(lam / (1 + (1 + lam.sum() / lam) / 31))
    return SeparateConfig(D, H, rank=R), m, theta, lstar


def _row(method, t_end, r, gap):
    print(f"{method:>6} {t_end:8.0e} {r.status:>11} {r.n_evals:8d} {r.n_steps:8d} {r.n_jac:6d} "
          f"{r.n_hvp:8d} {r.wall_time:9.4f} {gap:10.2e}")


def table(config, m, theta, lstar, t_ends, methods, rtol, atol, max_evals):
    print(f"{'method':>6} {'t_end':>8} {'status':>11} {'evals':>8} {'steps':>8} {'jac':>6} "
          f"{'hvp':>8} {'wall[s]':>9} {'L-L*':>10}")
    for method in methods:
        for t_end in t_ends:
            kw = {"lr": 0.02} if method == "euler" else {"dt": 0.5} if method == "rk4" else {}
            r = integrate(LinearAttentionObjective(config, m), theta, method=method, t_end=t_end,
                          rtol=rtol, atol=atol, record_times=np.geomspace(1, t_end, 60),
                          max_evals=max_evals, **kw)
            _row(method, t_end, r, r.loss[-1] - lstar)
            if r.status != "t_end":
                break


def white(rtol: float, atol: float):
    D, H = 4, 8
    m = Moments(np.eye(D), np.eye(D), 0.0, 1 / 31)
    v = np.full(H, 1e-3 / np.sqrt(H))
    th = np.concatenate([v, np.concatenate([vi * np.eye(D).ravel() / np.sqrt(D) for vi in v])])
    t = np.linspace(0, 20, 201)
    exact = white_merged_loss(t, s0=float(np.sum(v**2)), dim=D, inv_n=1 / 31)
    print(f"white merged, rtol={rtol} atol={atol}: max |L - closed form| on 201 points in [0, 20]")
    for method in ("rk45", "stiff", "auto"):
        r = integrate(LinearAttentionObjective(MergedConfig(D, H), m), th, method=method, t_end=20.0,
                      rtol=rtol, atol=atol, record_times=t)
        print(f"{method:>6} err={np.abs(r.loss - exact).max():.2e} evals={r.n_evals} "
              f"jac={r.n_jac} wall={r.wall_time:.4f}s")


def large(D: int, N: int, methods, rtol: float, atol: float, max_evals: int):
    """Time to L <= 1.05 L* for separate rank 1, H = D (the sweeps' large models)."""
    task = LinearRegression(D, context=N, spectrum=tuple(fastattn.tasks.spectrum("linear", D)),
                            rotate=False)
    model = SeparateKQ(D, D, 1, init_scale=1e-2 * math.sqrt(D), init_seed=0)
    lstar = minimum_loss(task.eigvals, task.inv_context_mean())
    theta = model.to_flat()
    for method in methods:
        r = integrate(LinearAttentionObjective(model.config, task.moments()), theta,
                      method=method, t_end=1e10, target_loss=1.05 * lstar, rtol=rtol, atol=atol,
                      max_evals=max_evals)
        print(f"D={D:3d} N={N:5d} P={theta.size:6d} {method:>6} {r.status:>11} t={r.t_final:9.3e} "
              f"evals={r.n_evals:9d} hvp={r.n_hvp:8d} steps={r.n_steps:8d} "
              f"wall={r.wall_time:8.2f}s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--setting", default="all", choices=("fig3", "rank", "white", "large", "all"))
    ap.add_argument("--max-evals", type=int, default=50_000_000, help="large: rk45 cap")
    ap.add_argument("--methods", default="auto,rk45", help="large: comma-separated methods")
    ap.add_argument("--init-scale", type=float, default=None,
                    help="the models' init scale (default: 1e-3 for fig3, 1e-2 for rank)")
    ap.add_argument("--init", dest="init_scale", action=Renamed, new="--init-scale", type=float,
                    default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--atol", type=float, default=1e-9)
    a = ap.parse_args()
    if a.setting in ("fig3", "all"):
        config, m, theta, lstar = fig3(a.init_scale or 1e-3, a.seed)
        print(f"[fig3] L* = {lstar:.12f}; rtol={a.rtol} atol={a.atol}")
        table(config, m, theta, lstar, (1e2, 1e3, 1e4, 1e5, 1e6, 1e8), METHODS, a.rtol, a.atol,
              2_000_000)
    if a.setting in ("rank", "all"):
        config, m, theta, lstar = rank_setting(a.init_scale or 1e-2, a.seed)
        print(f"\n[rank] D=8 H=9 R=4 (P={theta.size}); L* = {lstar:.12f}; rtol={a.rtol} "
              f"atol={a.atol}; stiff omitted (minutes: dense LU at every saddle step)")
        table(config, m, theta, lstar, (1e3, 1e4, 1e5, 1e6, 1e7), ("rk45", "auto"), a.rtol,
              a.atol, 20_000_000)
    if a.setting in ("white", "all"):
        print()
        white(1e-8, 1e-12)
        white(1e-8, a.atol)
    if a.setting == "large":
        for D in (32, 64):
            for N in (512, 2048):
                large(D, N, a.methods.split(","), a.rtol, a.atol, a.max_evals)


if __name__ == "__main__":
    main()
