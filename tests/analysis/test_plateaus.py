"""Plateau and drop detection on curves with known ground truth."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from fastattn.analysis.plateaus import (
    count_conspicuous_plateaus,
    detect_drops,
    detect_plateaus,
    find_plateaus_and_drops,
)
from fastattn.models import SeparateKQ
from fastattn.tasks import LinearRegression
from fastattn.theory import zhang2025 as z
from fastattn.training import train

LEVELS = [1.0, 0.64, 0.38, 0.21, 0.136]
CENTERS = [1.5, 2.1, 2.7, 3.3]  # log10 t of the drops
WIDTHS = [0.03, 0.04, 0.05, 0.05]  # decades


def sigmoid_curve(t: np.ndarray, levels=LEVELS, centers=CENTERS, widths=WIDTHS) -> np.ndarray:
    """Sum of sigmoids in log-time: plateaus at `levels`, drops centred at 10**centers."""
    lt = np.log10(t)
    out = np.full_like(t, levels[-1])
    for k, (c, w) in enumerate(zip(centers, widths, strict=True)):
        out += (levels[k] - levels[k + 1]) / (1 + np.exp((lt - c) / w))
    return out


def check(plateaus, drops, levels, centers, level_rtol, time_tol_decades) -> None:
    assert len(plateaus) == len(levels), [p.level for p in plateaus]
    np.testing.assert_allclose([p.level for p in plateaus], levels, rtol=level_rtol)
    assert len(drops) == len(centers)
    np.testing.assert_allclose(np.log10([d.time for d in drops]), centers, atol=time_tol_decades)
    for d, p, q in zip(drops, plateaus[:-1], plateaus[1:], strict=True):
        assert d.loss_before == p.level and d.loss_after == q.level
        assert p.end < d.time < q.start
    assert plateaus[-1].reaches_end and not plateaus[0].reaches_end


def test_exact_curve_on_log_grid() -> None:
    t = np.geomspace(1e-2, 1e5, 4000)
    plateaus, drops = find_plateaus_and_drops(t, sigmoid_curve(t))
    check(plateaus, drops, LEVELS, CENTERS, 3e-3, 0.02)


def test_gd_curve_on_linear_step_grid() -> None:
    eta = 0.01
    t = 2 * eta * np.arange(0, 5_000_001)  # includes t = 0, which is ignored
    plateaus, drops = find_plateaus_and_drops(t, sigmoid_curve(np.maximum(t, 1e-300)))
    check(plateaus, drops, LEVELS, CENTERS, 3e-3, 0.02)


@pytest.mark.parametrize("noise", [0.1, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_sgd_curve(noise: float, seed: int) -> None:
    t = 2 * 0.05 * np.arange(1, 200_001)  # t up to 2e4
    rng = np.random.default_rng(seed)
    loss = sigmoid_curve(t) * np.exp(noise * rng.standard_normal(t.size))
    plateaus, drops = find_plateaus_and_drops(t, loss)
    # the first plateau holds only ~300 samples: its median is known to ~noise/√300·1.25
    check(plateaus, drops, LEVELS, CENTERS, 0.02 + 0.15 * noise, 0.06)


# a staircase with exactly flat plateaus between known edges (log10 t) joined by cosine ramps in
# log-time; the plateaus between the ramps last 0.15 to 0.4 decades
STAIR_LEVELS = [1.0, 0.7, 0.45, 0.3, 0.2, 0.12]
STAIR_EDGES = [(-1.0, 0.5), (0.6, 0.75), (0.85, 1.25), (1.37, 1.52), (1.62, 1.8), (1.9, 3.0)]


def staircase(t: np.ndarray) -> np.ndarray:
    """ln L is flat on each of STAIR_EDGES and falls by a half cosine in log10 t between them."""
    lt, ll = np.log10(t), np.log(STAIR_LEVELS)
    out = np.full_like(t, ll[0])
    for k in range(len(STAIR_LEVELS) - 1):
        a, b = STAIR_EDGES[k][1], STAIR_EDGES[k + 1][0]
        x = np.clip((lt - a) / (b - a), 0.0, 1.0)
        out += (ll[k + 1] - ll[k]) * 0.5 * (1 - np.cos(np.pi * x))
    return np.exp(out)


def test_exact_staircase_keeps_plateau_edges() -> None:
    """Sampled like a flow record (60 points per decade), short plateaus keep their full length.

    An exact curve needs no averaging: a window wider than its sampling smears the ramps into the
    plateaus, trimming each edge and dropping the 0.15-decade plateaus below `min_decades`.
    """
    t = np.geomspace(1e-1, 1e3, 4 * 60 + 1)
    plateaus, drops = find_plateaus_and_drops(t, staircase(t))
    assert len(plateaus) == len(STAIR_LEVELS), [(p.start, p.end, p.level) for p in plateaus]
    np.testing.assert_allclose([p.level for p in plateaus], STAIR_LEVELS, rtol=1e-12)
    # edges to within a sample spacing (1/60 decade) plus half a grid bin
    np.testing.assert_allclose(np.log10([p.start for p in plateaus]), [a for a, _ in STAIR_EDGES], atol=0.025)
    np.testing.assert_allclose(np.log10([p.end for p in plateaus]), [b for _, b in STAIR_EDGES], atol=0.025)
    # a half cosine in log-time is steepest halfway along the ramp
    ramp_mid = [(b + a) / 2 for (_, b), (a, _) in pairwise(STAIR_EDGES)]
    np.testing.assert_allclose(np.log10([d.time for d in drops]), ramp_mid, atol=0.02)
    assert plateaus[-1].reaches_end and not plateaus[0].reaches_end


def test_exact_zhang_flow_record_finds_all_fixed_points() -> None:
    """The canonical `fastattn train --task linear_regression --model separate --out flow` run.

    Its record (~67 points per decade) holds the plateaus L(M_0..M_4) of Eq. 19; two of them
    last only ~0.18 decades. Each detected plateau must lie inside the stretch where the raw
    curve is within 1% of its level and cover that stretch up to 0.05 decades.
    """
    lam, inv_n = [0.4, 0.3, 0.2, 0.1], 1 / 31
    task = LinearRegression(dim=4, context=31, spectrum=lam, rotate=True, data_seed=0)
    model = SeparateKQ(dim=4, heads=5, rank=1, init_scale=0.01, init_seed=0)
    traj = train(model, task, method="flow", t_end=1e5)
    t, y = np.asarray(traj.time), np.asarray(traj.loss)
    plateaus, drops = find_plateaus_and_drops(t, y)
    levels = z.fixed_point_losses(np.array(lam), inv_n)
    assert len(plateaus) == len(levels) == 5, [(p.start, p.end, p.level) for p in plateaus]
    np.testing.assert_allclose([p.level for p in plateaus], levels, rtol=1e-4)
    assert len(drops) == 4
    assert all(p.end < d.time < q.start for d, (p, q) in zip(drops, pairwise(plateaus), strict=True))
    for p, level in zip(plateaus, levels, strict=True):
        # the loss decreases monotonically, so the 1% band of each level is one stretch
        band = t[(t > 0) & (np.abs(y / level - 1) < 0.01)]
        lo, hi = band.min(), band.max()
        assert lo <= p.start * (1 + 1e-9) and p.end <= hi * (1 + 1e-9)
        assert np.log10(p.start / lo) < 0.05 and np.log10(hi / p.end) < 0.05


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_sgd_curve_with_quiet_first_plateau(seed: int) -> None:
    """Heteroscedastic noise, as in Fig. 5's softmax runs: ~0.1% on the first plateau (most of
    the records), 2% on the last one (~1 record per 0.01 decade). The globally estimated noise
    under-reports the last stretch; the noisy-curve floor keeps it one plateau."""
    t = np.unique(np.geomspace(1, 400, 200).round())
    clean = sigmoid_curve(t, [0.995, 0.42], [np.log10(170)], [0.03])
    sd = np.where(t < 150, 1e-3, 0.02)
    loss = clean * np.exp(sd * np.random.default_rng(seed).standard_normal(t.size))
    plateaus, drops = find_plateaus_and_drops(t, loss)
    assert len(plateaus) == 2, [(p.start, p.end, p.level) for p in plateaus]
    np.testing.assert_allclose([p.level for p in plateaus], [0.995, 0.42], rtol=0.02)
    assert len(drops) == 1 and abs(np.log10(drops[0].time / 170)) < 0.05


def test_outlier_spikes_do_not_split_plateaus() -> None:
    t = np.geomspace(1e-1, 1e5, 6000)
    loss = sigmoid_curve(t)
    spikes = np.random.default_rng(3).choice(t.size, 30, replace=False)
    loss[spikes] *= 20.0
    plateaus, drops = find_plateaus_and_drops(t, loss)
    check(plateaus, drops, LEVELS, CENTERS, 3e-3, 0.03)


def test_no_plateau_in_a_power_law() -> None:
    t = np.geomspace(1, 1e4, 2000)
    assert detect_plateaus(t, t**-0.5) == []
    assert detect_drops(t, t**-0.5) == []


def test_exact_gradient_flow_of_separate_attention() -> None:
    """Population gradient flow of rank-1 ATTN_S (D = 4): plateaus at L(M_0..M_4) (Eq. 19)."""
    lam, dim, heads, inv_n = np.array([0.4, 0.3, 0.2, 0.1]), 4, 4, 1 / 31
    rng = np.random.default_rng(0)
    e, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    cov = (e * lam) @ e.T
    b = cov @ cov + inv_n * (cov + np.trace(cov) * np.eye(dim)) @ cov

    def split(y):
        return (
            y[:heads],
            y[heads : heads * (1 + dim)].reshape(heads, dim),
            y[heads * (1 + dim) :].reshape(heads, dim),
        )

    def rhs(_t, y):
        v, k, q = split(y)
        g = cov @ cov - b @ np.einsum("h,hd,he->de", v, k, q) @ cov
        return np.concatenate(
            [
                np.einsum("hd,de,he->h", k, g, q),
                (v[:, None] * (q @ g.T)).ravel(),
                (v[:, None] * (k @ g)).ravel(),
            ]
        )

    def loss(y):
        v, k, q = split(y)
        gam = np.einsum("h,hd,he->de", v, k, q)
        return np.trace(cov) - 2 * np.trace(gam @ cov @ cov) + np.trace(gam.T @ b @ gam @ cov)

    y0 = 1e-2 * rng.standard_normal(heads * (1 + 2 * dim))
    y0[heads:] /= np.sqrt(dim)
    t = np.geomspace(1e-1, 1e6, 2000)
    sol = solve_ivp(rhs, (0, t[-1]), y0, t_eval=t, method="LSODA", rtol=1e-9, atol=1e-14)
    curve = np.array([loss(sol.y[:, i]) for i in range(t.size)])
    plateaus, drops = find_plateaus_and_drops(t, curve)
    np.testing.assert_allclose([p.level for p in plateaus], z.fixed_point_losses(lam, inv_n), atol=2e-4)
    assert len(drops) == dim
    assert np.all(np.diff([d.time for d in drops]) > 0)


def test_conspicuous_count() -> None:
    """Alternating long and brief plateaus, like rank R = 2 (Fig. 4)."""
    levels = [1.0, 0.7, 0.5, 0.33, 0.2]
    centers = [1.0, 1.25, 2.5, 2.75]  # plateaus: long, brief, long, brief, final
    widths = [0.01] * 4
    t = np.geomspace(1e-2, 1e4, 6000)
    plateaus = detect_plateaus(t, sigmoid_curve(t, levels, centers, widths))
    assert len(plateaus) == 5
    assert count_conspicuous_plateaus(plateaus, min_decades=0.5) == 3
    assert count_conspicuous_plateaus(plateaus, min_decades=0.5, include_last=False) == 2
    assert count_conspicuous_plateaus(plateaus, min_decades=0.01) == 5
