"""Coefficients of the order-4 stabilized explicit Runge–Kutta method ("stabilized" integrator).

A ROCK4-type construction (Abdulle, SIAM J. Sci. Comput. 23, 2002), with every coefficient computed
here; docs/theory.md §4 explains the method. For s stages (s = 5 … 60):

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

Generated once; the C++ integrator reads csrc/stabilized_tables.h:
``python -m fastattn.population.stabilized --out csrc/stabilized_tables.h`` (≈ 15 min).
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass

import numpy as np
from numpy.polynomial import chebyshev as C
from scipy.optimize import least_squares, linprog

S_MIN, S_MAX = 5, 60
DAMPING = 0.95  # |R| bound away from the origin: stiff components are damped every step
# rooted trees of order ≤ 4 and their densities γ(t): a method has order 4 iff Φ(t) = 1/γ(t)
TREES = ("τ", "[τ]", "[τ,τ]", "[[τ]]", "[τ,τ,τ]", "[τ,[τ]]", "[[τ,τ]]", "[[[τ]]]")
GAMMA = np.array([1, 2, 3, 6, 4, 8, 12, 24], dtype=np.float64)


@dataclass(frozen=True)
class Table:
    """One stage count. Step from y with size h (f the vector field):

    Y₀ = y, Y₁ = y + μ₀ h f(y), Y_{j+1} = ν_j Y_j + κ_j Y_{j−1} + μ_j h f(Y_j) (j < m = s − 4);
    F₁ = Y_m, F_i = Y_m + h Σ_{k<i} a_ik f(F_k) (i = 2, 3, 4), y₁ = Y_m + h Σ b_i f(F_i);
    F₅ = Y_m + h Σ_{k≤3} a5_k f(F_k), ŷ₁ = Y_m + h Σ bh_i f(F_i) (bh over F₁, F₂, F₃, F₄, F₅; order 3).
    """

    s: int
    ell: float  # real stability interval [−ell, 0] of h·λ
    mu: np.ndarray  # [m]
    nu: np.ndarray  # [m]
    kappa: np.ndarray  # [m]
    a: np.ndarray  # [6]: a21, a31, a32, a41, a42, a43
    b: np.ndarray  # [4]
    a5: np.ndarray  # [3]
    bh: np.ndarray  # [5]


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


def tableau(mu, nu, kappa, a, b, a5=None, bh=None) -> tuple[np.ndarray, np.ndarray]:
    """The whole method as one explicit Butcher tableau (A [n, n], weights [n]); stages Y₀…Y_{m−1},
    F₁…F₄ (and F₅ when a5 is given; the weights are then bh)."""
    m = len(mu)
    n = m + (5 if a5 is not None else 4)
    rows, prev = [np.zeros(n)], np.zeros(n)
    for j in range(m):
        new = nu[j] * rows[-1] + kappa[j] * prev
        new[j] += mu[j]
        prev = rows[-1]
        rows.append(new)
    base = rows[-1]  # Y_m = y + h·base·f
    A = np.zeros((n, n))
    A[:m] = rows[:m]
    fin = [[], [a[0]], [a[1], a[2]], [a[3], a[4], a[5]]] + ([list(a5)] if a5 is not None else [])
    for i, coeffs in enumerate(fin):
        A[m + i] = base
        A[m + i, m:m + len(coeffs)] += coeffs
    weights = base.copy()
    weights[m:m + (len(bh) if bh is not None else 4)] += bh if bh is not None else b
    return A, weights


def elementary_weights(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Φ(t) for the trees of TREES."""
    c = A.sum(axis=1)
    Ac = A @ c
    return np.array([b.sum(), b @ c, b @ c**2, b @ Ac, b @ c**3, b @ (c * Ac), b @ (A @ c**2),
                     b @ (A @ Ac)])


def _finishing(mu, nu, kappa) -> tuple[np.ndarray, np.ndarray]:
    def residual(x):
        return elementary_weights(*tableau(mu, nu, kappa, x[:6], x[6:])) - 1.0 / GAMMA

    best = None
    rng = np.random.default_rng(0)
    for _ in range(40):
        # 10 unknowns, 8 conditions: a small penalty picks a moderate solution, then polish
        x = least_squares(lambda x: np.r_[residual(x), 1e-3 * x], rng.normal(0.0, 0.5, 10),
                          xtol=1e-15, ftol=1e-15, gtol=1e-15).x
        x = least_squares(residual, x, xtol=1e-15, ftol=1e-15, gtol=1e-15).x
        if np.max(np.abs(residual(x))) < 1e-13 and (best is None or np.linalg.norm(x) < np.linalg.norm(best)):
            best = x
    if best is None:
        raise RuntimeError("the finishing procedure's order conditions have no solution")
    return best[:6], best[6:]


def _embedded(mu, nu, kappa, a, b) -> tuple[np.ndarray, np.ndarray]:
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


def build(s: int) -> Table:
    """The coefficients for s stages (a few seconds to a minute: LP bisection)."""
    if not S_MIN <= s <= S_MAX:
        raise ValueError(f"s={s}: stage counts {S_MIN}..{S_MAX} are supported")
    ell, c = _longest_interval(s)
    roots = (C.chebroots(c) - 1.0) * ell / 2.0
    cplx = roots[np.abs(roots.imag) > 1e-8]
    real = np.sort(roots[np.abs(roots.imag) <= 1e-8].real)
    if cplx.size != 4 or real.size != s - 4:
        raise RuntimeError(f"s={s}: expected 4 complex and {s - 4} real roots, got {roots}")
    w = np.real(np.prod([1.0 - real / r for r in cplx], axis=0))  # w(z) at the real roots
    x = 1.0 + 2.0 * real / ell
    mu, nu, kappa = recurrence(real, w**2 / np.sqrt(np.maximum(1.0 - x * x, 1e-12)))
    a, b = _finishing(mu, nu, kappa)
    a5, bh = _embedded(mu, nu, kappa, a, b)
    return Table(s, ell, mu, nu, kappa, a, b, a5, bh)


def step(f, y: np.ndarray, h: float, t: Table) -> tuple[np.ndarray, np.ndarray, float]:
    """One step of the method, in numpy (the reference for the C++ integrator): returns
    (y₁, the error estimate h·Σ(b − bh)_i f(F_i), the largest |stage value| relative to |y|)."""
    scale = np.max(np.abs(y))
    prev, cur = y, y + (t.mu[0] * h) * f(y)
    stage_max = max(1.0, np.max(np.abs(cur)) / scale)
    for j in range(1, t.mu.size):
        prev, cur = cur, t.nu[j] * cur + t.kappa[j] * prev + (t.mu[j] * h) * f(cur)
        stage_max = max(stage_max, np.max(np.abs(cur)) / scale)
    a21, a31, a32, a41, a42, a43 = t.a
    k1 = f(cur)
    stages = [cur + h * a21 * k1]
    k2 = f(stages[-1])
    stages.append(cur + h * (a31 * k1 + a32 * k2))
    k3 = f(stages[-1])
    stages.append(cur + h * (a41 * k1 + a42 * k2 + a43 * k3))
    k4 = f(stages[-1])
    stages.append(cur + h * (t.a5[0] * k1 + t.a5[1] * k2 + t.a5[2] * k3))
    k5 = f(stages[-1])
    stage_max = max(stage_max, *(np.max(np.abs(v)) / scale for v in stages))
    y1 = cur + h * (t.b[0] * k1 + t.b[1] * k2 + t.b[2] * k3 + t.b[3] * k4)
    d = np.r_[t.b, 0.0] - t.bh
    err = h * (d[0] * k1 + d[1] * k2 + d[2] * k3 + d[3] * k4 + d[4] * k5)
    return y1, err, stage_max


def stability_function(t: Table, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """On y' = λy, z = hλ `[n]`, by the method's own step: (R(z) `[n]`, the error estimate E(z) `[n]`,
    the largest |stage value| over all z and stages)."""
    z = np.asarray(z, dtype=np.float64)
    y1, err, stage_max = step(lambda y: z * y, np.ones_like(z), 1.0, t)
    return y1, err, stage_max


def _c_array(name: str, values) -> str:
    body = ", ".join(repr(float(v)) for v in values)
    return f"static const double {name}[] = {{{body}}};"


def write_header(tables: list[Table], path: str) -> None:
    lines = ["// Generated by `python -m fastattn.population.stabilized`; do not edit.",
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
    ap = argparse.ArgumentParser(description="Generate csrc/stabilized_tables.h")
    ap.add_argument("--out", default="csrc/stabilized_tables.h")
    ap.add_argument("--smax", type=int, default=S_MAX)
    args = ap.parse_args()
    tables = []
    for s in range(S_MIN, args.smax + 1):
        tables.append(build(s))
        print(f"s={s}: ell={tables[-1].ell:.4g} ({tables[-1].ell / s**2:.4f} s^2)", flush=True)
    write_header(tables, args.out)


if __name__ == "__main__":
    main()
