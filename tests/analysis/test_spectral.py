"""The measures of Mainali & Teixeira 2025 on constructed matrices with known answers (spec §13.10),
and their landmarks on the paper's closed-form C0 trajectory."""

import numpy as np
import pytest

from fastattn.analysis import spectral as sp
from fastattn.theory import mainali2025 as th


def test_effective_rank_known_values(rng):
    for k in (1, 3, 5):
        assert sp.entropy_effective_rank(np.linalg.svd(np.eye(k), compute_uv=False)) == pytest.approx(k)
    u, v = rng.standard_normal(6), rng.standard_normal(4)
    sv = np.linalg.svd(np.outer(u, v), compute_uv=False)
    assert sp.entropy_effective_rank(sv) == pytest.approx(1.0, abs=1e-9)
    assert sp.entropy_effective_rank([2.0, 2.0, 0.0]) == pytest.approx(2.0)


def test_marginalized_suffix_sums_equal_brute_force(rng):
    sv = rng.uniform(0, 3, (7, 5))
    fast = sp.marginalized_effective_rank(sv, 4)
    srt = -np.sort(-sv, 1)
    brute = np.array([[sp.entropy_effective_rank(row[k:]) for k in range(5)] for row in srt])
    np.testing.assert_allclose(fast, brute, rtol=1e-12)
    with pytest.raises(ValueError, match="kmax"):
        sp.marginalized_effective_rank(sv, 5)


def test_marginalized_by_mode_drops_the_earliest_modes():
    t = np.arange(4.0)
    c = np.array([[0, 0, 0], [5, 0, 0], [5, 0, 3], [5, 1, 3]], dtype=float)
    out, order = sp.marginalized_effective_rank_by_mode(c, 2, t)
    assert list(order) == [0, 2, 1]
    assert out[-1, 2] == pytest.approx(1.0)
    np.testing.assert_allclose(out[:, 1], sp.entropy_effective_rank(c[:, [2, 1]]), equal_nan=True)
    mats = np.stack([np.diag(row) for row in c])
    np.testing.assert_allclose(np.sort(sp.mode_components(mats), 1), np.sort(c, 1), atol=1e-12)


def test_mode_components_recover_the_coefficients_of_a_non_symmetric_matrix(rng):
    """M(t) = U diag(c(t)) Vᵀ with U ≠ V random orthogonal and non-square: c_i(t) is recovered in
    the final matrix's singular basis, each mode by its own pair (u_i, v_i). Diagonal matrices
    alone cannot tell M from Mᵀ."""
    for m, n in ((5, 3), (4, 4)):
        u = np.linalg.qr(rng.standard_normal((m, m)))[0][:, :n]
        v = np.linalg.qr(rng.standard_normal((n, n)))[0]
        c = rng.uniform(0.1, 1.0, (6, n))
        c[-1] = np.arange(n, 0, -1)          # distinct final values: the basis is defined
        mats = np.einsum("mi,ti,ni->tmn", u, c, v)
        np.testing.assert_allclose(sp.mode_components(mats), c, atol=1e-12)


def test_subspace_distance_known_values(rng):
    m = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 5))          # rank 2
    assert sp.subspace_distance(m, m)[0] == pytest.approx(0, abs=1e-10)
    a = rng.standard_normal((5, 5)) + 5 * np.eye(5)                          # invertible
    d, k = sp.subspace_distance(a @ m, m)
    assert k == 2 and d == pytest.approx(0, abs=1e-9)
    other = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 5))
    dn = sp.subspace_distance(other, m, normalized=True)[0]
    assert 0 < dn <= 1
    orth = np.zeros((4, 4))
    orth[0, 0] = 1.0
    target = np.zeros((4, 4))
    target[1, 1] = 2.0
    assert sp.subspace_distance(orth, target, normalized=True)[0] == pytest.approx(1.0)


def test_autocorrelation_is_the_direct_sum(rng):
    y = rng.standard_normal(50)
    a = sp.loss_autocorrelation(y)
    for lag in (0, 1, 7, 49):
        assert a[lag] == pytest.approx(np.mean(y[: 50 - lag] * y[lag:]), rel=1e-10)
    w = sp.windowed_autocorrelation(y, lag=1, window=3)
    assert w[10] == pytest.approx(np.mean(y[9:12] * y[10:13]))


def test_c0_closed_form_landmarks():
    """Spec §9.0: norm-curvature peaks of ‖p̄2‖_F (paper closed form) at [1.20, 5.82, 25.42] ± 0.05
    and Variant A marginalised-rank dips of diag a (k = 0, 1, 2) at [1.9, 7.2, 27.4] ± 0.2."""
    pt = th.paper_theory([2, 1, 0.5, 0.25], 32, 0.64, 1e-4)
    t = np.linspace(0.01, 200, 40_001)
    a = pt.a(t)
    norm = np.sqrt(a.sum(1))                       # p = q = √a
    curv = np.gradient(np.gradient(norm, t), t)
    peaks = sp.landmarks(t, curv, "peak", prominence=1e-3)
    np.testing.assert_allclose(peaks[:3], [1.20, 5.82, 25.42], atol=0.05)
    mer = sp.marginalized_effective_rank(a, 2)
    dips = [sp.landmarks(t, mer[:, k], "dip", prominence=1e-3)[0] for k in range(3)]
    np.testing.assert_allclose(dips, [1.9, 7.2, 27.4], atol=0.2)


def test_landmarks_equal_scipy_find_peaks(rng):
    from scipy.signal import find_peaks

    y = np.cumsum(rng.standard_normal(300))
    x = np.arange(300.0)
    for prom in (0.0, 1.0, 5.0):
        np.testing.assert_array_equal(sp.landmarks(x, y, "peak", prom), x[find_peaks(y, prominence=prom)[0]])
        np.testing.assert_array_equal(sp.landmarks(x, y, "dip", prom), x[find_peaks(-y, prominence=prom)[0]])
