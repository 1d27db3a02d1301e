"""Generates csrc/integrators/stabilized_tables.h, the coefficients of the "stabilized" integrator
(an order-4 stabilized explicit Runge-Kutta method of the ROCK4 type; Abdulle, SIAM J. Sci. Comput. 23,
2002), every coefficient computed here; docs/theory.md §4 explains the method. For s stages (s = 5 … 60):

1. Stability polynomial R_s (degree s): the LP minimax problem "R = e^z + O(z^5), |R| ≤ 1 on
   [−1, 0] and |R| ≤ η = 0.95 on [−ℓ, −1]", with ℓ the largest length for which it is feasible
   (bisection). ℓ_s ≈ 0.35·s² — s gradient evaluations buy a real stability interval growing as s².
2. R_s has two complex-conjugate pairs of roots, w(z) (degree 4), and s − 4 real ones, P(z). P is
   evaluated by a three-term recurrence (the orthogonal polynomials of a discrete measure on its
   roots, weights w(r)²/√(1−x²)), so every internal stage is bounded by 1 on [−ℓ, 0].
3. A four-stage finishing procedure, started from the recurrence's result, realises w(z): its ten
   coefficients solve the eight order-4 conditions of the whole method (B-series, by least squares).
4. An embedded order-3 solution for the error estimate uses a fifth stage that does not depend on
   the fourth, so the estimate stays O(z⁴·P(z)) — bounded — on stiff components.

Run once (≈ 15 min): ``python tools/stabilized_tables.py --out csrc/integrators/stabilized_tables.h``.
The method's numpy reference step and the order/stability checks the tests run on the shipped tables
live in fastattn/population/stabilized.py.
"""

from __future__ import annotations

import argparse
import math
import os

import numpy as np
from numpy.polynomial import chebyshev as C
from scipy.optimize import least_squares, linprog

from fastattn.population.stabilized import GAMMA, S_MAX, S_MIN, Table, elementary_weights, tableau

DAMPING = 0.95  # |R| bound away from the origin: stiff components are damped every step


def stability_polynomial(s: int, ell: float, npts: int | None = None) -> tuple[float, np.ndarray]:
    """Minimax LP at fixed ell: (max |R| on [−ell, −1], Chebyshev coefficients of R in x = 1 + 2z/ell)."""
    npts = npts or 40 * s
    x = np.cos(np.linspace(0.0, np.pi, npts))
    z = (x - 1.0) * ell / 2.0
    V = C.chebvander(x, s)
    eye = np.eye(s + 1)
    # d^k R/dz^k (0) = 1, k = 0..4 (order 4 on linear problems); d/dz = (2/ell) d/dx
    eq = np.array([[C.chebval(1.0, C.chebder(eye[j], k)) * (2.0 / ell) ** k for j in range(s + 1)]
                   for k in range(5)])
    far = (z <= -1.0).astype(np.float64)
    # variables (c_0..c_s, t): minimise t with |V c| ≤ t far from 0 and ≤ 1 near it
    a_ub = np.block([[V, -far[:, None]], [-V, -far[:, None]]])
    b_ub = np.r_[1.0 - far, 1.0 - far]
    res = linprog(np.r_[np.zeros(s + 1), 1.0], A_ub=a_ub, b_ub=b_ub,
                  A_eq=np.c_[eq, np.zeros(5)], b_eq=np.ones(5), bounds=[(None, None)] * (s + 2),
                  method="highs")
    if res.status != 0:
        return math.inf, np.zeros(s + 1)
    return float(res.x[-1]), res.x[:-1]


def _longest_interval(s: int, iters: int = 24) -> tuple[float, np.ndarray]:
    lo, hi, best = 0.15 * s * s, 0.40 * s * s, None
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        t, c = stability_polynomial(s, mid)
        if t <= DAMPING:
            lo, best = mid, c
        else:
            hi = mid
    if best is None:
        raise RuntimeError(f"no order-4 stability polynomial with s={s} stages on [−{lo:.3g}, 0]")
    return lo, best


def recurrence(nodes: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three-term recurrence (μ, ν, κ) of the orthogonal polynomials Q_j of the discrete measure
    Σ weights·δ(nodes), normalised Q_j(0) = 1: Q_{j+1}(z) = (μ_j z + ν_j) Q_j(z) + κ_j Q_{j−1}(z).
    Q_m (m = len(nodes)) vanishes at the nodes: it is Π(1 − z/node)."""
    w = weights / weights.sum()
    p_prev, p = np.zeros_like(nodes), np.ones_like(nodes)  # monic π_{j−1}, π_j at the nodes
    p_prev0, p0 = 0.0, 1.0  # … and at 0
    mu, nu, kappa = [], [], []
    for j in range(nodes.size):
        norm = np.sum(w * p * p)
        aj = np.sum(w * nodes * p * p) / norm
        bj = norm / np.sum(w * p_prev * p_prev) if j else 0.0
        p_next, p_next0 = (nodes - aj) * p - bj * p_prev, -aj * p0 - bj * p_prev0
        mu.append(p0 / p_next0)
        nu.append(-aj * p0 / p_next0)
        kappa.append(-bj * p_prev0 / p_next0)
        p_prev, p, p_prev0, p0 = p, p_next, p0, p_next0
    return np.array(mu), np.array(nu), np.array(kappa)


def finishing(mu, nu, kappa, starts: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """The finishing procedure's (a [6], b [4]): the order-4 conditions' solution of least norm found
    from `starts` random starts."""
    def residual(x):
        return elementary_weights(*tableau(mu, nu, kappa, x[:6], x[6:])) - 1.0 / GAMMA

    best = None
    rng = np.random.default_rng(0)
    for _ in range(starts):
        # 10 unknowns, 8 conditions: a small penalty picks a moderate solution, then polish
        x = least_squares(lambda x: np.r_[residual(x), 1e-3 * x], rng.normal(0.0, 0.5, 10),
                          xtol=1e-15, ftol=1e-15, gtol=1e-15).x
        x = least_squares(residual, x, xtol=1e-15, ftol=1e-15, gtol=1e-15).x
        if np.max(np.abs(residual(x))) < 1e-13 and (best is None or np.linalg.norm(x) < np.linalg.norm(best)):
            best = x
    if best is None:
        raise RuntimeError("the finishing procedure's order conditions have no solution")
    return best[:6], best[6:]


def embedded(mu, nu, kappa, a, b) -> tuple[np.ndarray, np.ndarray]:
    """The embedded order-3 solution's (a5 [3], bh [5])."""
    # F5 = Y_m + h (b1 f(F1) + b2 f(F2) + b3 f(F3)); bh4 = 0. The four order-3 conditions fix bh1,
    # bh2, bh3, bh5 (a 4-stage finishing alone would force bh = b).
    a5 = np.array(b[:3])
    base = elementary_weights(*tableau(mu, nu, kappa, a, b, a5, np.zeros(5)))[:4]
    rows = []
    for k in (0, 1, 2, 4):  # Φ is linear in bh: one column per unknown weight
        e = np.zeros(5)
        e[k] = 1.0
        rows.append(elementary_weights(*tableau(mu, nu, kappa, a, b, a5, e))[:4] - base)
    sol = np.linalg.solve(np.array(rows).T, 1.0 / GAMMA[:4] - base)
    return a5, np.array([sol[0], sol[1], sol[2], 0.0, sol[3]])


def stage_recurrence(s: int, ell: float, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mu, nu, kappa) [s − 4] of the recurrence for the stability polynomial with Chebyshev
    coefficients c on [−ell, 0]: its s − 4 real roots, weighted by w(r)²/√(1 − x²)."""
    roots = (C.chebroots(c) - 1.0) * ell / 2.0
    cplx = roots[np.abs(roots.imag) > 1e-8]
    real = np.sort(roots[np.abs(roots.imag) <= 1e-8].real)
    if cplx.size != 4 or real.size != s - 4:
        raise RuntimeError(f"s={s}: expected 4 complex and {s - 4} real roots, got {roots}")
    w = np.real(np.prod([1.0 - real / r for r in cplx], axis=0))  # w(z) at the real roots
    x = 1.0 + 2.0 * real / ell
    return recurrence(real, w**2 / np.sqrt(np.maximum(1.0 - x * x, 1e-12)))


def build(s: int) -> Table:
    """The coefficients for s stages (seconds to a minute: the LP bisection, the finishing solve)."""
    if not S_MIN <= s <= S_MAX:
        raise ValueError(f"s={s}: stage counts {S_MIN}..{S_MAX} are supported")
    ell, c = _longest_interval(s)
    mu, nu, kappa = stage_recurrence(s, ell, c)
    a, b = finishing(mu, nu, kappa)
    a5, bh = embedded(mu, nu, kappa, a, b)
    return Table(s, ell, mu, nu, kappa, a, b, a5, bh)


def _c_array(name: str, values) -> str:
    body = ", ".join(repr(float(v)) for v in values)
    return f"static const double {name}[] = {{{body}}};"


def write_header(tables: list[Table], path: str) -> None:
    lines = ["// Generated by `python tools/stabilized_tables.py`; do not edit.",
             "// Coefficients of the order-4 stabilized explicit method, s = "
             f"{tables[0].s}..{tables[-1].s} stages.", "#pragma once", "",
             f"constexpr int kStabSMin = {tables[0].s}, kStabSMax = {tables[-1].s};",
             _c_array("kStabEll", [t.ell for t in tables]),
             "// recurrence of stage count s starts at kStabOffset[s - kStabSMin] and has s - 4 entries",
             "static const int kStabOffset[] = {"
             + ", ".join(str(sum(u.s - 4 for u in tables[:i])) for i in range(len(tables))) + "};",
             _c_array("kStabMu", np.concatenate([t.mu for t in tables])),
             _c_array("kStabNu", np.concatenate([t.nu for t in tables])),
             _c_array("kStabKappa", np.concatenate([t.kappa for t in tables])),
             "// per s: a21 a31 a32 a41 a42 a43 | b1..b4 | a51 a52 a53 | bh1..bh5",
             _c_array("kStabFinish", np.concatenate([np.r_[t.a, t.b, t.a5, t.bh] for t in tables])), ""]
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write("\n".join(lines))
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description="Generate csrc/integrators/stabilized_tables.h")
    ap.add_argument("--out", default="csrc/integrators/stabilized_tables.h")
    ap.add_argument("--smax", type=int, default=S_MAX)
    args = ap.parse_args()
    tables = []
    for s in range(S_MIN, args.smax + 1):
        tables.append(build(s))
        print(f"s={s}: ell={tables[-1].ell:.4g} ({tables[-1].ell / s**2:.4f} s^2)", flush=True)
    write_header(tables, args.out)


if __name__ == "__main__":
    main()
