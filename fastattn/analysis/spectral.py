"""Macroscopic measures of Mainali & Teixeira 2025 §4 (spec §8): effective rank, its marginalised
forms, the subspace distance to the final weights, curvatures of the loss autocorrelation and of a
parameter norm, and peak / dip landmarks on a log-time axis. numpy float64 throughout.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def entropy_effective_rank(sv: ArrayLike) -> np.ndarray:
    """exp(H) of the L1-normalised singular values (Roy & Vetterli; paper Eq. 15), over the last
    axis: sv `[..., r]` → `[...]`. H = ln S1 − Σ σ ln σ / S1, S1 = Σ σ, with 0 ln 0 = 0."""
    s = np.abs(np.asarray(sv, dtype=np.float64))
    total = s.sum(-1)
    slog = np.where(s > 0, s * np.log(np.where(s > 0, s, 1.0)), 0.0).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.exp(np.log(total) - slog / total)


def marginalized_effective_rank(sv: ArrayLike, kmax: int) -> np.ndarray:
    """Variant A (magnitude, spec §8.2): EffRank with the k largest singular values dropped at each
    time, k = 0..kmax, by suffix sums in O(r). sv `[T, r]` → `[T, kmax+1]`."""
    s = -np.sort(-np.abs(np.asarray(sv, dtype=np.float64)), axis=-1)
    if not 0 <= kmax < s.shape[-1]:
        raise ValueError(f"kmax must be in [0, {s.shape[-1] - 1}] (fewer than the {s.shape[-1]} "
                         f"singular values); got {kmax}")
    slog = np.where(s > 0, s * np.log(np.where(s > 0, s, 1.0)), 0.0)
    suffix = np.cumsum(s[..., ::-1], -1)[..., ::-1]
    suffix_log = np.cumsum(slog[..., ::-1], -1)[..., ::-1]
    total, tlog = suffix[..., : kmax + 1], suffix_log[..., : kmax + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.exp(np.log(total) - tlog / total)


def mode_components(mats: ArrayLike, final: ArrayLike | None = None) -> np.ndarray:
    """c_i(t) = |u_i(∞)ᵀ M(t) v_i(∞)| in the singular basis of the final matrix (spec §8.2, Variant
    B): mats `[T, m, n]`, final `[m, n]` (default the last) → `[T, r]`."""
    m = np.asarray(mats, dtype=np.float64)
    u, _, vt = np.linalg.svd(m[-1] if final is None else np.asarray(final, dtype=np.float64))
    r = min(u.shape[0], vt.shape[0])
    return np.abs(np.einsum("im,tij,mj->tm", u[:, :r], m, vt[:r]))


def marginalized_effective_rank_by_mode(components: ArrayLike, kmax: int, t: ArrayLike,
                                        threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Variant B (mode identity, spec §8.2): modes ordered by when c_i(t) first reaches
    `threshold`·c_i(final); EffRank of {c_i(t)} with the k earliest removed, k = 0..kmax.
    components `[T, r]`, t `[T]` → (`[T, kmax+1]`, the order `[r]`)."""
    c = np.abs(np.asarray(components, dtype=np.float64))
    t = np.asarray(t, dtype=np.float64)
    reached = c >= threshold * c[-1]
    first = np.where(reached.any(0), t[np.argmax(reached, 0)], np.inf)
    order = np.argsort(first, kind="stable")
    if not 0 <= kmax < c.shape[1]:
        raise ValueError(f"kmax must be in [0, {c.shape[1] - 1}]; got {kmax}")
    return np.stack([entropy_effective_rank(c[:, order[k:]]) for k in range(kmax + 1)], -1), order


def subspace_distance(mt: ArrayLike, final: ArrayLike, k: int | None = None, rtol: float = 1e-6,
                      normalized: bool = False) -> tuple[float, int]:
    """min_A ‖A M(t) − M(∞)‖_F = ‖M(∞)(I − V Vᵀ)‖_F (paper Eq. 16; spec §8.3), V the top-k right
    singular vectors of M(t), evaluated as the residual ‖M∞ − M∞VVᵀ‖_F. k defaults to the
    numerical rank of M(∞) (σ > rtol·σ_max): with a full-rank M(t) and no truncation the distance
    is identically 0. Returns (distance, k); normalized divides by ‖M(∞)‖_F (∈ [0, 1])."""
    mt, mf = np.asarray(mt, dtype=np.float64), np.asarray(final, dtype=np.float64)
    if k is None:
        sf = np.linalg.svd(mf, compute_uv=False)
        k = int((sf > rtol * sf[0]).sum()) if sf[0] > 0 else 0
    _, _, vt = np.linalg.svd(mt, full_matrices=False)
    v = vt[:k].T
    # the residual itself, not ‖M∞‖² − ‖M∞V‖² (which cancels to √eps at small distances)
    dist = float(np.linalg.norm(mf - (mf @ v) @ v.T))
    total = float(np.linalg.norm(mf))
    return (dist / total if normalized and total > 0 else dist), k


def to_uniform(t: ArrayLike, y: ArrayLike, n: int, log: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Resample y(t) `[T]` (t > 0 where log) to n uniform points in ln t (log) or t: (grid, y)."""
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if log:
        keep = t > 0
        grid = np.linspace(np.log(t[keep][0]), np.log(t[keep][-1]), n)
        return grid, np.interp(grid, np.log(t[keep]), y[keep])
    grid = np.linspace(t[0], t[-1], n)
    return grid, np.interp(grid, t, y)


def loss_autocorrelation(loss: ArrayLike, centered: bool = False) -> np.ndarray:
    """Variant A (global lag, spec §8.4): A(τ) = (1/(T−τ)) Σ_t L_t L_{t+τ} on a uniform grid, by FFT;
    centered subtracts the mean (autocovariance). `[T]` → `[T]`."""
    y = np.asarray(loss, dtype=np.float64)
    if centered:
        y = y - y.mean()
    n = y.size
    f = np.fft.rfft(y, 2 * n)
    acf = np.fft.irfft(f * np.conj(f), 2 * n)[:n]
    return acf / (n - np.arange(n))


def windowed_autocorrelation(loss: ArrayLike, lag: int = 1, window: int = 9) -> np.ndarray:
    """Variant B (time-resolved, spec §8.4): A_t = mean over a centred window of w points of
    L_s L_{s+lag}, at every t of a uniform grid (edges use the points available). `[T]` → `[T]`."""
    y = np.asarray(loss, dtype=np.float64)
    prod = np.concatenate([y[:-lag] * y[lag:], np.full(lag, np.nan)]) if lag else y * y
    half = window // 2
    return np.array([np.nanmean(prod[max(0, i - half): i + half + 1]) for i in range(y.size)])


def landmarks(x: ArrayLike, y: ArrayLike, kind: str = "peak", prominence: float = 0.0
              ) -> np.ndarray:
    """Positions x of the local maxima ("peak") or minima ("dip") of y `[T]` whose topographic
    prominence (height above the higher of the two lowest points separating it from higher ground
    on either side) is at least `prominence`; plateaus count once, at their first point."""
    if kind not in ("peak", "dip"):
        raise ValueError(f"kind must be 'peak' or 'dip'; got {kind!r}")
    y = np.asarray(y, dtype=np.float64)
    y = y if kind == "peak" else -y
    x = np.asarray(x, dtype=np.float64)
    out = []
    for i in range(1, y.size - 1):
        if not (y[i] > y[i - 1] and y[i] >= y[i + 1]):
            continue
        j = i + 1
        while j < y.size and y[j] == y[i]:
            j += 1
        if j < y.size and y[j] > y[i]:
            continue                                   # a shoulder, not a maximum
        left = y[:i][::-1]
        higher = np.nonzero(left > y[i])[0]
        base_left = left[: higher[0]].min() if higher.size else left.min()
        right = y[j:]
        higher = np.nonzero(right > y[i])[0]
        base_right = (right[: higher[0]].min() if higher.size else right.min()) if right.size else y[i]
        if y[i] - max(base_left, base_right) >= prominence:
            out.append(x[i])
    return np.asarray(out)
