"""fastattn.theory.mainali2025: the paper's closed form against its own ODE and the spec's C0
numbers (§13.4), the exact optimum against an independent optimiser (§13.6), the conservation law
of the exact flow (§13.7) and the escape rate against the exact flow's growth (§6.5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import minimize

from fastattn.population import aligned_flow
from fastattn.theory import mainali2025 as th

C0 = {"s": np.array([2.0, 1.0, 0.5, 0.25]), "n": 32, "eta_p": 0.64, "a0": 1e-4}


def test_paper_closed_form_is_its_ode_and_the_c0_numbers():
    pt = th.paper_theory(C0["s"], C0["n"], C0["eta_p"], C0["a0"])
    np.testing.assert_allclose(pt.a_inf, [0.45878, 0.87075, 1.58025, 2.66667], atol=1e-4)
    np.testing.assert_allclose(pt.t_half, [1.64667, 7.08736, 30.21206, 127.38915], atol=1e-4)
    assert pt.loss_0 == pytest.approx(1.87447, abs=1e-4)
    assert pt.loss_inf == pytest.approx(0.24120, abs=1e-4)
    assert pt.loss(np.array([1e5]))[0] == pytest.approx(pt.loss_inf, rel=1e-12)   # Eq. 14 → A114
    np.testing.assert_allclose(th.plateau_levels(C0["s"], C0["n"]),
                               [1.8750, 0.9574, 0.5221, 0.3245, 0.24120], atol=1e-4)
    np.testing.assert_allclose(pt.t_star(), pt.t_half, rtol=1e-3)     # t* = t_half up to O(a⁰/a^∞)
    t = np.linspace(0, 200, 41)
    p0 = np.full(4, np.sqrt(C0["a0"]))

    def rhs(_, y):
        return np.concatenate(th.paper_ode_rhs(y[:4], y[4:], C0["s"], C0["n"], C0["eta_p"]))

    # bounded steps: DOP853's dense output between steps is then accurate to 1e-11
    sol = solve_ivp(rhs, (0, 200), np.concatenate([p0, p0]), t_eval=t, rtol=1e-12, atol=1e-14,
                    method="DOP853", max_step=1.0)
    np.testing.assert_allclose((sol.y[:4] * sol.y[4:]).T, pt.a(t), rtol=0, atol=1e-8)
    assert pt.time_to_fraction(0.5) == pytest.approx(pt.t_half, rel=1e-12)


@pytest.mark.parametrize(("s", "n", "loss"), [((4, 2, 1, 0.5, 0.25), 10, 1.249978),
                                              ((1, 0.8, 0.6, 0.4, 0.2), 20, 0.328804),
                                              ((1, 1, 1, 1, 1), 10, 0.9375),
                                              ((6.0, 0.01), 3, None)])
def test_exact_optimum_equals_an_independent_optimiser(s, n, loss):
    from fastattn.population import WishartAlignedObjective

    s = np.asarray(s, dtype=float)
    a, l_star = th.exact_optimum(s, n)
    if loss is not None:
        assert l_star == pytest.approx(loss, abs=1e-6)
    obj = WishartAlignedObjective(s, n)
    best = min((minimize(lambda x: obj.loss_grad(x), x0, jac=True, method="BFGS",
                         options={"gtol": 1e-12, "maxiter": 10_000})
                for x0 in np.random.default_rng(0).uniform(0.1, 1.5, (5, 2 * s.size))),
               key=lambda r: r.fun)
    assert best.fun == pytest.approx(l_star, rel=1e-8)
    np.testing.assert_allclose(best.x[: s.size] * best.x[s.size:], a, atol=1e-5)
    if np.allclose(s, s[0]):                                     # isotropic: the paper's values
        pt = th.paper_theory(s, n, 1.0, 1e-3)
        np.testing.assert_allclose(a, pt.a_inf, rtol=1e-12)
        assert l_star == pytest.approx(pt.loss_inf, rel=1e-12)


def test_exact_flow_conserves_the_total_but_not_the_per_mode_balance():
    t = np.unique(np.concatenate([[0.0, 400.0], np.geomspace(0.01, 2000, 300)]))
    p0 = np.full(4, np.sqrt(C0["a0"]))
    fl = aligned_flow.exact_flow(C0["s"], C0["n"], C0["eta_p"], p0, p0, t)
    c = fl.conserved()
    assert np.max(np.abs(c - c[0])) < 1e-10
    c_modes = fl.p**2 - fl.q**2
    # the spec's "final" C_α are those at 400 epochs; the limit is [0.7582, 0.7509, 0.2356, -1.7447]
    np.testing.assert_allclose(c_modes[t == 400.0][0], [0.757, 0.750, 0.231, -1.738], atol=2e-3)
    np.testing.assert_allclose(c_modes[-1], [0.7582, 0.7509, 0.2356, -1.7447], atol=2e-4)
    a_star, l_star = th.exact_optimum(C0["s"], C0["n"])
    np.testing.assert_allclose(fl.a[-1], a_star, rtol=1e-4)
    assert fl.loss[-1] == pytest.approx(l_star, rel=1e-6)
    np.testing.assert_allclose(fl.t_half(), [1.636, 7.318, 33.61, 159.95], rtol=3e-3)


def test_escape_rate_is_the_exact_flows_growth_of_an_unlearned_mode():
    """Mode 4 of C0 on the plateau after modes 1–3 (t = 60): the flow's d ln a₄/dt equals 2 g₄, with
    g₄/(ηP s₄²) = 0.80 there (the spec's §6.5 quotes ≈ 0.78), where the paper has g₄ = ηP s₄²."""
    s, n, eta_p = C0["s"], C0["n"], C0["eta_p"]
    p0 = np.full(4, np.sqrt(C0["a0"]))
    fl = aligned_flow.exact_flow(s, n, eta_p, p0, p0, np.array([0.0, 60.0, 60.5]))
    p, q = fl.p[1], fl.q[1]
    k_q = (s[:3] ** 2 * q[:3] ** 2).sum()
    k_p = (s[:3] * p[:3] ** 2).sum()
    g = th.escape_rate(s[3], k_q, k_p, n, eta_p)
    assert g / (eta_p * s[3] ** 2) == pytest.approx(0.80, abs=0.01)
    growth = np.log(fl.a[2, 3] / fl.a[1, 3]) / 0.5
    assert growth == pytest.approx(2 * g, rel=0.005)
    assert th.escape_rate(0.01, 10.0, 10.0, 10, 1.0) < 0                # K_q K_p > N² s: stuck


def test_half_times_interpolate_and_bad_spectra_are_named():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    a = np.array([[0.0, 0.0], [0.2, 0.0], [0.6, 0.0], [1.0, 0.0]])
    out = th.half_times(t, a)
    assert out[0] == pytest.approx(1.75) and np.isnan(out[1])
    with pytest.raises(ValueError, match="positive eigenvalues"):
        th.paper_theory([1.0, 0.0], 4, 1.0, 1e-3)
