"""Evaluations and wall time vs t for each integrator, Zhang Fig. 3 setting (separate, D=4, H=5, R=1).

Run: python bench/population_table.py [--init 1e-3] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from fastattn.population import Moments, integrate, n_params


def fig3_setting(init: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    D, H, R = 4, 5, 1
    lam = np.array([0.4, 0.3, 0.2, 0.1])
    Qm, _ = np.linalg.qr(rng.standard_normal((D, D)))
    m = Moments(cov=Qm @ np.diag(lam) @ Qm.T, w_second=np.eye(D), noise=0.0, inv_n=1 / 31)
    v = rng.normal(0, init / np.sqrt(H), H)
    kq = rng.normal(0, init / np.sqrt(H * R * D), 2 * H * R * D)
    theta = np.concatenate([v, kq])
    assert theta.size == n_params("separate", (D, H, R))
    lstar = lam.sum() - np.sum(lam / (1 + (1 + lam.sum() / lam) / 31))
    return (D, H, R), m, theta, lstar


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--atol", type=float, default=1e-9)
    a = ap.parse_args()
    dims, m, theta, lstar = fig3_setting(a.init, a.seed)
    print(f"L* = {lstar:.12f}; rtol={a.rtol} atol={a.atol} init={a.init}")
    print(f"{'method':>6} {'t_end':>8} {'status':>10} {'evals':>8} {'steps':>8} {'jac':>6} "
          f"{'wall[s]':>9} {'L-L*':>10}")
    for method in ("rk45", "stiff", "rk4", "euler"):
        for t_end in (1e2, 1e3, 1e4, 1e5, 1e6, 1e8):
            kw = {"lr": 0.02} if method == "euler" else {"dt": 0.5} if method == "rk4" else {}
            r = integrate("separate", theta, dims, m, method, t_end=t_end, rtol=a.rtol,
                          atol=a.atol, record_times=np.geomspace(1, t_end, 60),
                          max_evals=2_000_000, **kw)
            print(f"{method:>6} {t_end:8.0e} {r.status:>10} {r.n_evals:8d} {r.n_steps:8d} "
                  f"{r.n_jac:6d} {r.wall_time:9.4f} {r.loss[-1] - lstar:10.2e}")
            if r.status != "t_end":
                break


if __name__ == "__main__":
    main()
