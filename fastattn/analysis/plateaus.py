"""Plateaus and drops of loss curves on a logarithmic time axis.

The detector works on any positive loss curve sampled at positive times: exact gradient-flow
trajectories (smooth, log-spaced, spanning decades), gradient-descent curves (linear step grid,
t = 2ηk) and noisy SGD curves (multiplicative noise).

Algorithm (`find_plateaus_and_drops`):

1. Bin ln L on a uniform log10-time grid (`points_per_decade`) by the per-bin **median** (robust to
   outliers), then smooth with a Gaussian of width `smooth_decades` using normalised convolution
   weighted by the bin counts, so sparse early bins of a linear step grid and dense late bins are
   handled alike. For noisy data the width grows locally until the window holds enough samples
   for the smoothed level and slope to be precise (the noise is estimated from a first pass);
   empty stretches are interpolated.
2. Compute the log-log slope s = d ln L / d ln t of the smoothed curve.
3. Flat points: |s| < `slope_tol`. Each run of flat points is split greedily wherever the smoothed
   ln L drifts by more than `rel_tol` from the value at the start of the piece (so a slow decline
   is not one long plateau).
4. Pieces shorter than `min_decades` are discarded; neighbouring pieces whose levels differ by at
   most `rel_tol` (in ln L) are merged when the curve between them stays within that band, or
   when they are closer than `merge_gap_decades` (noise blips, spikes).
   Both tolerances are widened by `n_sigma` times the noise of the smoothed curve, estimated
   robustly from the residuals of the raw samples (zero for exact data), so sparse noisy stretches
   are not fragmented.
5. Each plateau's level is the median of the raw loss samples in [start, end]. The drop between
   consecutive plateaus is placed at the steepest descent (most negative s) between them, among
   the points whose smoothed loss lies in the middle 60% of the drop (in ln L).

Resolution limits: drops smaller than about `rel_tol` in ln L, or plateaus shorter than
`min_decades`, are not resolved. The last plateau may be the converged loss (`reaches_end`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.ndimage import gaussian_filter1d

__all__ = [
    "Drop",
    "Plateau",
    "conspicuous_plateaus",
    "count_conspicuous_plateaus",
    "detect_drops",
    "detect_plateaus",
    "find_plateaus_and_drops",
    "smooth_log_curve",
]


@dataclass(frozen=True)
class Plateau:
    """A flat stretch of a loss curve.

    Attributes:
        start: first time of the plateau.
        end: last time of the plateau.
        level: median of the loss samples in [start, end].
        reaches_end: whether it extends to the end of the data (possibly the converged loss, or
            a plateau cut off by the end of training).
    """

    start: float
    end: float
    level: float
    reaches_end: bool = False

    @property
    def decades(self) -> float:
        """Duration in log-time, log10(end/start)."""
        return math.log10(self.end / self.start)

    @property
    def mid(self) -> float:
        """Geometric midpoint √(start·end)."""
        return math.sqrt(self.start * self.end)


@dataclass(frozen=True)
class Drop:
    """A transition between two consecutive plateaus.

    Attributes:
        time: time of steepest descent of the smoothed log-loss (in log-time) between them.
        loss_before: level of the plateau before.
        loss_after: level of the plateau after.
    """

    time: float
    loss_before: float
    loss_after: float

    @property
    def size(self) -> float:
        """loss_before − loss_after."""
        return self.loss_before - self.loss_after


def _clean(time: ArrayLike, loss: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(time, dtype=np.float64).ravel()
    y = np.asarray(loss, dtype=np.float64).ravel()
    if t.shape != y.shape:
        raise ValueError(f"time and loss differ in shape: {t.shape} vs {y.shape}")
    keep = (t > 0) & np.isfinite(t) & np.isfinite(y) & (y > 0)
    t, y = t[keep], y[keep]
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    if t.size < 3 or t[-1] <= t[0]:
        raise ValueError("need at least 3 samples with positive time, positive loss and a span")
    return t, y


@dataclass(frozen=True)
class _Smoothed:
    grid: np.ndarray  # log10 t [G]
    smooth: np.ndarray  # smoothed ln L [G]
    slope: np.ndarray  # d ln L / d ln t [G]
    level_sd: np.ndarray  # noise s.d. of `smooth` [G]
    slope_sd: np.ndarray  # noise s.d. of `slope` [G]
    sd_raw: float  # robust s.d. of the raw ln L about the smoothed curve
    width: np.ndarray  # Gaussian width used, in decades [G]


def _smooth(
    t: np.ndarray,
    y: np.ndarray,
    points_per_decade: int,
    smooth_decades: float,
    min_samples: int,
    noise_sd: float = 0.0,
    slope_sd_max: float = math.inf,
    max_smooth_decades: float = 0.25,
) -> _Smoothed:
    lt, ly = np.log10(t), np.log(y)
    n_bins = max(3, math.ceil((lt[-1] - lt[0]) * points_per_decade) + 1)
    edges = np.linspace(lt[0], lt[-1], n_bins + 1)
    grid = 0.5 * (edges[:-1] + edges[1:])
    idx = np.clip(np.searchsorted(edges, lt, side="right") - 1, 0, n_bins - 1)
    counts = np.bincount(idx, minlength=n_bins).astype(np.float64)
    med = np.zeros(n_bins)
    starts = np.searchsorted(idx, np.arange(n_bins), side="left")
    stops = np.searchsorted(idx, np.arange(n_bins), side="right")
    for b in np.flatnonzero(counts):
        med[b] = np.median(ly[starts[b] : stops[b]])
    sigma = max(smooth_decades * points_per_decade, 1e-3)
    # adaptive width: the narrowest of sigma·2^(k/2) whose window holds >= min_samples samples
    # and whose slope noise (given a prior noise estimate noise_sd) is <= slope_sd_max
    step = grid[1] - grid[0]
    smooth = np.full(n_bins, np.nan)
    n_eff = np.ones(n_bins)
    width = np.full(n_bins, sigma)
    for k in range(80):
        s_k = sigma * 2.0 ** (k / 2)
        num = gaussian_filter1d(med * counts, s_k, mode="constant", truncate=4.0)
        den = gaussian_filter1d(counts, s_k, mode="constant", truncate=4.0)
        ne = den * math.sqrt(2.0 * math.pi) * s_k
        last = s_k >= max(max_smooth_decades * points_per_decade, sigma)
        sl_sd = noise_sd / np.sqrt(np.maximum(ne, 1.0)) / (math.sqrt(2.0) * s_k * step * math.log(10))
        good = (ne >= min_samples) & (sl_sd <= slope_sd_max)
        take = np.isnan(smooth) & (den > 0) & (good | last)
        smooth[take], n_eff[take], width[take] = num[take] / den[take], ne[take], s_k
        if not np.isnan(smooth).any() or last:
            break
    ok = ~np.isnan(smooth)
    smooth = np.interp(grid, grid[ok], smooth[ok])
    slope = np.gradient(smooth, grid) / math.log(10.0)
    # noise: robust s.d. of raw ln L about the smoothed curve, shrunk by the window's sample count
    resid = ly - np.interp(lt, grid, smooth)
    sd_raw = 1.4826 * float(np.median(np.abs(resid - np.median(resid))))
    level_sd = sd_raw / np.sqrt(np.maximum(n_eff, 1.0))
    # derivative of Gaussian-smoothed white noise: s.d. ≈ level_sd / (√2 · width in ln t)
    slope_sd = level_sd / (math.sqrt(2.0) * np.maximum(width, 0.5) * step * math.log(10.0))
    return _Smoothed(grid, smooth, slope, level_sd, slope_sd, sd_raw, width * step)


# samples per window wherever a curve is not exact: in the pass that estimates the noise, and as
# the floor of the detector's windows for noisy curves
_NOISY_WINDOW = 5
# ln L scatter about the first pass below which a curve counts as exact: above the solver and
# rounding error of flow and GD records (<= 3e-7 in the quick Zhang ledger), below sampled runs
_EXACT_NOISE = 1e-6


def _min_samples_for_noise(sd_raw: float, n_sigma: float, rel_tol: float) -> int:
    """Samples per smoothing window that make the smoothed level's noise ≲ rel_tol / n_sigma.

    An exact curve (sd_raw <= _EXACT_NOISE) needs no averaging: one sample per window, since
    wider windows smear each drop into the edges of the plateaus around it (at 67 records per
    decade a floor of 5 trimmed every edge by ~0.08 decades and lost 0.18-decade plateaus).
    Sparse stretches of an exact curve (early steps of a step grid) need no floor either: each
    window still widens until it holds about one sample. A noisy curve keeps a floor of
    _NOISY_WINDOW: its noise is estimated globally, and where it is heteroscedastic (SGD: a quiet
    first plateau, larger fluctuations after a drop) the estimate under-reports the loud stretch.
    """
    floor = 1 if sd_raw <= _EXACT_NOISE else _NOISY_WINDOW
    return int(np.clip(math.ceil((max(n_sigma, 1.0) * sd_raw / rel_tol) ** 2), floor, 1000))


def smooth_log_curve(
    time: ArrayLike,
    loss: ArrayLike,
    points_per_decade: int = 100,
    smooth_decades: float = 0.005,
    min_samples: int = 5,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Robust smoothing of ln L on a uniform log10-time grid (step 1 of the detector).

    Args:
        time: sample times `[T]` (non-positive times and non-positive losses are dropped).
        loss: losses `[T]`.
        points_per_decade: grid density.
        smooth_decades: Gaussian smoothing width (standard deviation) in decades.
        min_samples: where fewer raw samples than this fall in the window (early times of a
            linear step grid), the width is doubled until they do.
    Returns:
        log10 t grid `[G]`, smoothed ln L `[G]`, log-log slope d ln L / d ln t `[G]`.
    """
    t, y = _clean(time, loss)
    sm = _smooth(t, y, points_per_decade, smooth_decades, min_samples)
    return sm.grid, sm.smooth, sm.slope


def find_plateaus_and_drops(
    time: ArrayLike,
    loss: ArrayLike,
    *,
    points_per_decade: int = 100,
    smooth_decades: float = 0.005,
    min_samples: int | None = None,
    slope_tol: float = 0.1,
    rel_tol: float = 0.05,
    min_decades: float = 0.05,
    merge_gap_decades: float = 0.3,
    n_sigma: float = 3.0,
) -> tuple[list[Plateau], list[Drop]]:
    """Detect plateaus and the drops between them (see the module docstring for the algorithm).

    Args:
        time: sample times `[T]` (any order; t ≤ 0 is ignored).
        loss: losses `[T]` (> 0).
        points_per_decade: log-time grid density.
        smooth_decades: Gaussian smoothing width in decades (raise it for very noisy curves).
        min_samples: minimum number of raw samples per smoothing window (the width adapts);
            None chooses it from the estimated noise, ((n_sigma · noise s.d.) / rel_tol)²
            clipped to 5..1000 (1..1000 for an exact curve, whose scatter is at rounding level:
            one sample per window), and also widens each window until the slope noise is at most
            slope_tol.
        slope_tol: a point is flat if |d ln L / d ln t| < slope_tol (+ n_sigma × slope noise).
        rel_tol: the largest drift of ln L within a plateau, and the largest level difference
            (in ln L) of two pieces that may be merged (each + n_sigma × level noise).
        min_decades: minimum plateau duration, log10(end/start).
        merge_gap_decades: pieces at the same level closer than this are merged even if the
            curve leaves the band between them (a noise spike).
        n_sigma: how many noise standard deviations (estimated robustly from the residuals of
            the raw curve about the smoothed one) are added to the tolerances; 0 for exact data.
    Returns:
        plateaus in time order, and drops (len(plateaus) − 1 of them, or none).
    """
    t, y = _clean(time, loss)
    if min_samples is None:
        # the noise is measured about a curve averaged over >= _NOISY_WINDOW samples: windows of
        # single samples would follow the noise of sparse stretches and hide it
        sd_raw = _smooth(t, y, points_per_decade, smooth_decades, _NOISY_WINDOW).sd_raw
        min_samples = _min_samples_for_noise(sd_raw, n_sigma, rel_tol)
        # and wide enough windows that the slope noise is <= slope_tol
        sm = _smooth(t, y, points_per_decade, smooth_decades, min_samples, sd_raw, slope_tol)
    else:
        sm = _smooth(t, y, points_per_decade, smooth_decades, min_samples)
    grid, smooth, slope = sm.grid, sm.smooth, sm.slope
    lvl_tol = rel_tol + n_sigma * sm.level_sd
    flat = np.abs(slope) < slope_tol + n_sigma * sm.slope_sd
    pieces: list[tuple[int, int]] = []  # inclusive grid index ranges
    i, n = 0, grid.size
    while i < n:
        if not flat[i]:
            i += 1
            continue
        j0, ref = i, smooth[i]
        while i < n and flat[i]:
            if abs(smooth[i] - ref) > lvl_tol[i]:
                pieces.append((j0, i - 1))
                j0, ref = i, smooth[i]
            i += 1
        pieces.append((j0, i - 1))
    pieces = [p for p in pieces if grid[p[1]] - grid[p[0]] >= min_decades]

    # merge neighbours at the same level when the curve between them stays within the band
    merged: list[tuple[int, int]] = []
    for p in pieces:
        if merged:
            q = merged[-1]
            lvl_q = float(np.median(smooth[q[0] : q[1] + 1]))
            lvl_p = float(np.median(smooth[p[0] : p[1] + 1]))
            tol = float(lvl_tol[q[1] : p[0] + 1].max())  # noise where the two pieces meet
            between = smooth[q[1] : p[0] + 1]
            in_band = between.min() >= min(lvl_p, lvl_q) - tol and between.max() <= max(lvl_p, lvl_q) + tol
            short_gap = grid[p[0]] - grid[q[1]] <= merge_gap_decades
            if abs(lvl_p - lvl_q) <= tol and (in_band or short_gap):
                merged[-1] = (q[0], p[1])
                continue
        merged.append(p)

    lt = np.log10(t)
    half_bin = 0.5 * (grid[1] - grid[0])
    plateaus: list[Plateau] = []
    for a, b in merged:
        lo, hi = grid[a] - half_bin, grid[b] + half_bin
        sel = (lt >= lo) & (lt <= hi)
        level = float(np.median(y[sel])) if np.any(sel) else float(np.exp(np.median(smooth[a : b + 1])))
        start = float(max(10.0**lo, t[0]))
        end = float(min(10.0**hi, t[-1]))
        plateaus.append(Plateau(start, end, level, reaches_end=b == n - 1))

    drops: list[Drop] = []
    for (_, b0), (a1, _), p, q in zip(merged[:-1], merged[1:], plateaus[:-1], plateaus[1:], strict=True):
        window = np.arange(b0, a1 + 1)
        # steepest descent among points in the middle 60% of the drop (in ln L), so that noise
        # on the plateau shoulders cannot win; fall back to the whole window
        hi_l, lo_l = math.log(p.level), math.log(q.level)
        inner = window[
            (smooth[window] <= hi_l - 0.2 * (hi_l - lo_l)) & (smooth[window] >= lo_l + 0.2 * (hi_l - lo_l))
        ]
        cand = inner if inner.size else window
        k = cand[np.argmin(slope[cand])]
        drops.append(Drop(float(10.0 ** grid[k]), p.level, q.level))
    return plateaus, drops


def detect_plateaus(time: ArrayLike, loss: ArrayLike, **kwargs: float) -> list[Plateau]:
    """Plateaus of a loss curve; keyword arguments as in `find_plateaus_and_drops`.

    Args:
        time: `[T]`; loss: `[T]`.
    """
    return find_plateaus_and_drops(time, loss, **kwargs)[0]  # type: ignore[arg-type]


def detect_drops(time: ArrayLike, loss: ArrayLike, **kwargs: float) -> list[Drop]:
    """Drops between consecutive plateaus; keyword arguments as in `find_plateaus_and_drops`.

    Args:
        time: `[T]`; loss: `[T]`.
    """
    return find_plateaus_and_drops(time, loss, **kwargs)[1]  # type: ignore[arg-type]


def conspicuous_plateaus(
    plateaus: list[Plateau], min_decades: float = 0.3, include_last: bool = True
) -> list[Plateau]:
    """Plateaus lasting at least `min_decades` in log-time (a factor 10^min_decades in time).

    Args:
        plateaus: output of `detect_plateaus`.
        min_decades: duration threshold log10(end/start); 0.3 ≈ a factor of 2.
        include_last: keep a final plateau that reaches the end of the data (often the
            converged loss, which theory does not count as a plateau).
    """
    return [p for p in plateaus if p.decades >= min_decades and (include_last or not p.reaches_end)]


def count_conspicuous_plateaus(
    plateaus: list[Plateau], min_decades: float = 0.3, include_last: bool = True
) -> int:
    """Number of `conspicuous_plateaus`."""
    return len(conspicuous_plateaus(plateaus, min_decades, include_last))
