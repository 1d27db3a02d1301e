"""Musat et al. 2025: the 3-parameter model's closed form, its exact flow's emergence times and the
discrete GD step counts against spec §7.6, §7.7, §11.1, §11.2; Theorem 2's bounds and asymptotics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastattn.population import emergence
from fastattn.population.induction import InductionThreeParamObjective
from fastattn.theory import musat2025 as th

# spec §11.1: (N, θ, L, ∇L)
UNIT_VALUES = [
    (3, (0.3, 0.7, 0.9), 0.7888682712, (-0.0359348908, -0.0686594972, -0.0838610893)),
    (5, (1.5, -2.0, 1.2), 1.0244188552, (0.057351044, -0.0447398687, 0.1434983118)),
    (8, (2.0, 5.0, 0.8), 0.6337870149, (-0.2944372009, -0.0899676258, -0.3700472268)),
]

# spec §11.2: N → (T_γ, T_β(½), t_ICL, T_β(0.1)/N², T_α(0.1)/N², t(L ≤ ½))
FLOW_TABLE = {
    4: (2.768, 18.83, 31.74, 0.3972, 1.1516, 41.43),
    16: (11.089, 258.80, 450.66, 0.2607, 0.9324, 625.76),
    64: (44.361, 3982.57, 7054.63, 0.2152, 0.8819, 10101.11),
    256: (177.446, 63107.50, 112324.76, 0.2035, 0.8696, 163174.59),
    4096: (2839.131, 16106855.04, 28712786.52, 0.1999, 0.8657, 42021478.41),
}

# spec §7.7, lr_eff = 100/256: γ≥.5 / β≥.1 / α≥.1 / β≥.5 / α≥.5 / L≤.5 (steps)
GD_TABLE = {
    4: (7, 17, 48, 49, 83, 108),
    8: (14, 52, 165, 175, 300, 408),
    16: (29, 171, 612, 663, 1155, 1605),
    32: (57, 605, 2356, 2583, 4547, 6429),
    64: (114, 2257, 9248, 10196, 18061, 25864),
    96: (171, 4955, 20678, 22842, 40547, 58387),
    128: (227, 8700, 36645, 40520, 72004, 104017),
}


def _rel(a, b):
    return abs(a - b) / abs(b)


def _matches_printed(value, printed, rel=1e-4):
    """Within `rel` or within the rounding of the printed number (two or three decimals)."""
    return abs(value - printed) <= max(rel * abs(printed), 0.0051)


@pytest.mark.parametrize(("N", "theta", "loss", "grad"), UNIT_VALUES)
def test_closed_form_unit_values(N, theta, loss, grad):
    obj = InductionThreeParamObjective(N)
    L, g = obj.loss_grad(np.array(theta))
    assert L == pytest.approx(loss, abs=1e-9)
    np.testing.assert_allclose(g, grad, atol=1e-9)
    assert float(th.three_param_loss(*theta, N)) == pytest.approx(loss, abs=1e-9)
    np.testing.assert_allclose(th.three_param_rhs(*theta, N), -np.array(grad), atol=1e-9)


@pytest.mark.parametrize("N", [1, 2, 7, 50])
def test_zero_init_gradient(N):
    L, g = InductionThreeParamObjective(N).loss_grad(np.zeros(3))
    assert L == 1.0
    np.testing.assert_allclose(g, [0.0, 0.0, -1.0 / N], atol=1e-15)


@pytest.mark.parametrize("N", [2, 5, 33])
def test_closed_form_equals_per_query_form_and_stays_finite(N, rng):
    obj = InductionThreeParamObjective(N)
    for _ in range(5):
        theta = rng.normal(0, 2, 3)
        L, g = obj.loss_grad(theta)
        Lq, gq = obj.loss_grad_query(theta, N)
        assert L == pytest.approx(Lq, rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(g, gq, rtol=1e-10, atol=1e-13)
    L, g = obj.loss_grad(np.array([800.0, 900.0, 2.0]))  # exp(β e^α ...) overflows the printed form
    assert np.isfinite(L) and np.all(np.isfinite(g))


@pytest.mark.parametrize(("query", "mask"), [("last", "strict"), ("last", "inclusive"),
                                             ("uniform", "strict"), ("uniform", "inclusive")])
def test_gradient_matches_central_differences(query, mask, rng):
    obj = InductionThreeParamObjective(6, query, mask)
    theta = rng.normal(0, 1.5, 3)
    _, g = obj.loss_grad(theta)
    h = 1e-6
    fd = [(obj.loss_grad(theta + h * e)[0] - obj.loss_grad(theta - h * e)[0]) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def test_emergence_times_reproduce_spec_table():
    for N, (tg, tb, ticl, tb01, ta01, tloss) in FLOW_TABLE.items():
        r = emergence.emergence_times(N, loss_level=0.5)
        assert _matches_printed(r["T_gamma"], tg)
        assert _matches_printed(r["T_beta"], tb)
        assert _matches_printed(r["T_alpha"], ticl) and r["t_icl"] == r["T_alpha"]
        assert _matches_printed(r["t_loss"], tloss)
        assert r["T_gamma"] < r["T_beta"] < r["T_alpha"]
        r01 = emergence.emergence_times(N, thresholds=(0.5, 0.1, 0.1))
        assert _rel(r01["T_beta"] / N**2, tb01) < 5e-4 and _rel(r01["T_alpha"] / N**2, ta01) < 5e-4


def test_emergence_times_asymptotics():
    """t_ICL/N² → √(2π) erf(1/√2) = 1.711249; two-term asymptotes within 1 % for N ≥ 64."""
    assert th.asymptotic_times(1, two_term=False)["t_icl"] == pytest.approx(1.711249, abs=1e-6)
    assert th.asymptotic_times(1, two_term=False)["T_beta"] == pytest.approx(0.959850, abs=1e-6)
    fig6 = th.asymptotic_times(1, (0.5, 0.1, 0.1), two_term=False)
    assert fig6["T_beta"] == pytest.approx(0.199667, abs=1e-6)
    assert fig6["T_alpha"] == pytest.approx(0.865486, abs=1e-6)
    ratios = []
    for N in (64, 512, 4096):
        r, a = emergence.emergence_times(N), th.asymptotic_times(N)
        for key in ("T_gamma", "T_beta", "T_alpha", "t_icl"):
            assert _rel(r[key], a[key]) < 0.01, (N, key)
        ratios.append(r["t_icl"] / N**2)
    assert ratios[-1] == pytest.approx(1.711249, abs=5e-4)
    assert ratios[0] > ratios[1] > ratios[2] > 1.711249  # approached from above (0.682 N > 0)


def test_plateau_and_loss_drop_is_not_emergence():
    for N in (16, 64):
        r = emergence.emergence_times(N, loss_level=0.5)
        assert 1.3 < r["t_loss"] / r["t_icl"] < 1.5
        assert th.plateau_loss(N) == 1 - 1 / (2 * N)


def test_theorem2_bounds_contain_the_flow():
    for N in (16, 256):
        r, b = emergence.emergence_times(N), th.theorem2_bounds(N)
        for key in ("T_gamma", "T_beta", "T_alpha"):
            lo, hi = b[key]
            assert lo <= r[key] <= hi, (N, key, r[key], b[key])


@pytest.mark.parametrize("N", sorted(GD_TABLE))
def test_gd_step_counts_of_spec_7_7(N):
    tg, tb01, ta01, tb, ta, tl = GD_TABLE[N]
    lr = 100 / 256
    s = emergence.emergence_steps_gd(N, lr, (0.5, 0.5, 0.5))
    s01 = emergence.emergence_steps_gd(N, lr, (0.5, 0.1, 0.1), loss_level=None)
    assert (s["T_gamma"], s01["T_beta"], s01["T_alpha"], s["T_beta"], s["T_alpha"], s["t_loss"]) == (
        tg, tb01, ta01, tb, ta, tl)


def test_gd_step_counts_match_a_direct_loop():
    N, lr = 8, 100 / 256
    obj = InductionThreeParamObjective(N)
    theta, first = np.zeros(3), {}
    for k in range(1, 500):
        g = obj.loss_grad(theta)[1]
        theta = theta - lr * g
        for key, idx in (("T_alpha", 0), ("T_beta", 1), ("T_gamma", 2)):
            if theta[idx] >= 0.5 and key not in first:
                first[key] = k
        if obj.loss_grad(theta)[0] <= 0.5 and "t_loss" not in first:
            first["t_loss"] = k
    s = emergence.emergence_steps_gd(N, lr)
    assert {k: s[k] for k in first} == first


def test_large_lr_diverges_below_n_50():
    """lr_eff = 100 (scalar parameterisation): stability needs lr < 2N near the plateau (spec §7.7)."""
    with pytest.raises(ValueError, match="not reached"):
        emergence.emergence_steps_gd(16, 100.0, max_steps=2000)
    s = emergence.emergence_steps_gd(64, 100.0, (0.5, 0.1, 0.1), loss_level=None)
    assert (s["T_gamma"], s["T_beta"], s["T_alpha"]) == (1, 9, 37)


def test_unreached_loss_level_does_not_hide_the_crossings():
    """N = 64 at lr = 100 crosses all three thresholds (1/9/37) and then diverges on the plateau: the
    default loss_level = ½ is never reached, which is reported as t_loss = None, not raised."""
    s = emergence.emergence_steps_gd(64, 100.0, (0.5, 0.1, 0.1))
    assert (s["T_gamma"], s["T_beta"], s["T_alpha"], s["t_icl"]) == (1, 9, 37, 37)
    assert s["t_loss"] is None
    assert emergence.emergence_steps_gd(8, 100 / 256)["t_loss"] is not None


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="query"):
        InductionThreeParamObjective(4, query="first")
    with pytest.raises(ValueError, match="N="):
        InductionThreeParamObjective(0)
    with pytest.raises(ValueError, match="thresholds"):
        emergence.emergence_times(4, thresholds=(0.5, -1, 0.5))
    assert math.isfinite(th.uniform_query_t_icl(64))
