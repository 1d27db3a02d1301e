"""Weight diagnostics and curve comparison against known ground truth."""

from __future__ import annotations

import numpy as np
import pytest

from fastattn.analysis.curves import compare_curves, fit_time_shift
from fastattn.analysis.weights import (
    alignment,
    best_aligned,
    effective_rank,
    head_cosine_similarity,
    participation_ratio,
    split_merged,
    split_separate,
    value_weights,
)


def rotation(dim: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
    return q


def test_alignment_recovers_eigen_coefficients() -> None:
    dim, heads, rank = 5, 3, 2
    e = rotation(dim, 0)
    c = np.random.default_rng(1).standard_normal((heads, rank, dim))
    k = c @ e.T  # k = Σ_d c_d e_d
    al = alignment(k, e)
    assert al.shape == (heads, rank, dim)
    np.testing.assert_allclose(al, np.abs(c) / np.linalg.norm(c, axis=-1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(np.sum(al**2, axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(alignment(k[:, 0], e), al[:, 0], atol=1e-12)
    assert np.all(alignment(np.zeros((2, dim)), e) == 0)


def test_best_aligned_finds_permutation() -> None:
    dim = 6
    e = rotation(dim, 2)
    perm = np.random.default_rng(3).permutation(dim)
    k = 3.0 * e[:, perm].T * np.array([1, -1, 1, -1, 1, -1])[:, None]
    k += 0.3 * np.random.default_rng(4).standard_normal(k.shape)
    np.testing.assert_array_equal(best_aligned(k, e), perm)


def test_split_layouts_roundtrip() -> None:
    heads, rank, dim, steps = 3, 2, 4, 5
    rng = np.random.default_rng(5)
    v, k, q = (
        rng.standard_normal((steps, heads)),
        rng.standard_normal((steps, heads, rank, dim)),
        rng.standard_normal((steps, heads, rank, dim)),
    )
    flat = np.concatenate([v, k.reshape(steps, -1), q.reshape(steps, -1)], axis=1)
    v2, k2, q2 = split_separate(flat, heads, rank, dim)
    np.testing.assert_array_equal(v2, v)
    np.testing.assert_array_equal(k2, k)
    np.testing.assert_array_equal(q2, q)
    np.testing.assert_array_equal(value_weights(flat, heads), v)
    u = rng.standard_normal((steps, heads, dim, dim))
    flat_m = np.concatenate([v, u.reshape(steps, -1)], axis=1)
    v3, u3 = split_merged(flat_m, heads, dim)
    np.testing.assert_array_equal(v3, v)
    np.testing.assert_array_equal(u3, u)
    with pytest.raises(ValueError):
        split_merged(flat_m, heads, dim + 1)
    with pytest.raises(ValueError):
        split_separate(flat, heads, rank + 1, dim)


def test_parallel_heads_diagnostics() -> None:
    heads, dim = 6, 4
    rng = np.random.default_rng(6)
    a = rng.standard_normal((dim, dim))
    scales = rng.standard_normal(heads)
    u = scales[:, None, None] * a  # parallel heads (App. D.7)
    cos = head_cosine_similarity(u)
    np.testing.assert_allclose(cos, np.sign(np.outer(scales, scales)), atol=1e-12)
    assert participation_ratio(u) == pytest.approx(1.0, abs=1e-12)
    assert effective_rank(u) == 1
    # orthogonal heads of equal norm: PR = H
    w1 = np.eye(dim * dim)[:heads] * 2.0
    assert participation_ratio(w1) == pytest.approx(heads)
    assert effective_rank(w1) == heads
    np.testing.assert_allclose(head_cosine_similarity(w1), np.eye(heads), atol=1e-12)
    # generic random heads are not parallel
    assert participation_ratio(rng.standard_normal((heads, dim * dim))) > 2.0


def sig_curve(t: np.ndarray, center: float, hi: float = 1.0, lo: float = 0.2) -> np.ndarray:
    return lo + (hi - lo) / (1 + np.exp((np.log10(t) - center) / 0.1))


@pytest.mark.parametrize("shift", [0.37, -0.8])
def test_fit_time_shift_log(shift: float) -> None:
    t = np.geomspace(1e-1, 1e5, 800)
    a = sig_curve(t, 2.0 + shift)
    tb = np.geomspace(1e-2, 1e6, 900)
    b = sig_curve(tb, 2.0)
    s, res = fit_time_shift(t, a, tb, b)
    assert s == pytest.approx(shift, abs=1e-4)
    assert res < 1e-3
    noisy = a * np.exp(0.1 * np.random.default_rng(7).standard_normal(t.size))
    s2, res2 = fit_time_shift(t, noisy, tb, b)
    assert s2 == pytest.approx(shift, abs=0.02)
    assert res2 == pytest.approx(0.1, rel=0.2)


def test_fit_time_shift_linear() -> None:
    t = np.linspace(0, 100, 1001)
    a = 1 / (1 + np.exp((t - 40.0) / 3))
    tb = np.linspace(-50, 150, 1500)
    b = 1 / (1 + np.exp((tb - 27.5) / 3))
    s, res = fit_time_shift(t, a + 1.0, tb, b + 1.0, log_time=False)
    assert s == pytest.approx(12.5, abs=1e-3)
    assert res < 1e-4


def test_compare_curves_icl_iwl() -> None:
    t = 2 * 1e-3 * np.arange(1, 200_001)
    curves = {
        "train": sig_curve(t, 1.0, lo=0.10),
        "iwl": sig_curve(t, 0.8, lo=0.05),
        "icl": sig_curve(t, 1.4, lo=0.30),
    }
    cmp = compare_curves(t, curves)
    for name, y in curves.items():
        # ground truth: steepest descent of ln L against ln t of the exact curve
        steepest = t[np.argmin(np.gradient(np.log(y), np.log(t)))]
        assert np.log10(cmp.first_drop_time[name]) == pytest.approx(np.log10(steepest), abs=0.02)
    assert cmp.first_drop_time["iwl"] < cmp.first_drop_time["train"] < cmp.first_drop_time["icl"]
    assert cmp.loss_after_first_drop["icl"] == pytest.approx(0.30, rel=0.02)
    assert cmp.final_loss["iwl"] == pytest.approx(0.05, rel=0.01)
    assert set(cmp.difference) == {("train", "iwl"), ("train", "icl"), ("iwl", "icl")}
    np.testing.assert_allclose(cmp.difference[("train", "icl")], curves["train"] - curves["icl"])
    flat = compare_curves(t, {"flat": np.ones_like(t)})
    assert np.isnan(flat.first_drop_time["flat"])
