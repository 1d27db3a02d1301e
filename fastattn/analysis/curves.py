"""Comparing loss curves: time-shift fits and in-context vs in-weight test losses."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from fastattn.analysis.plateaus import find_plateaus_and_drops

__all__ = ["CurveComparison", "compare_curves", "fit_time_shift"]


def fit_time_shift(
    time_a: ArrayLike,
    loss_a: ArrayLike,
    time_b: ArrayLike,
    loss_b: ArrayLike,
    *,
    log_time: bool = True,
    log_loss: bool = True,
    bounds: tuple[float, float] | None = None,
    min_overlap: float = 0.5,
    n_grid: int = 400,
) -> tuple[float, float]:
    """Least-squares time shift that maps curve b onto curve a.

    With `log_time`, the model is L_a(t) ≈ L_b(t · 10^{−shift}) (shift in decades, so b is
    delayed by a factor 10^shift); otherwise L_a(t) ≈ L_b(t − shift). Curve b is linearly
    interpolated (in log10 t when `log_time`) at curve a's sample times; only points of a that
    fall inside b's shifted range count. The objective is the mean squared difference (of ln L if
    `log_loss`), minimised by a grid search over `bounds` followed by bounded Brent refinement.

    Args:
        time_a: `[Ta]` sample times of the reference curve (> 0 if log_time).
        loss_a: `[Ta]`.
        time_b: `[Tb]` sample times of the curve to shift.
        loss_b: `[Tb]`.
        log_time: shift on a log10-time axis (decades) or on linear time.
        log_loss: compare ln L (relative errors) instead of L.
        bounds: search interval for the shift; default ± the span of the union of both axes.
        min_overlap: smallest fraction of curve a's points that must overlap b after the shift.
        n_grid: grid-search resolution.
    Returns:
        (shift, residual) where residual is the root-mean-square difference at the optimum.
    """
    ta, ya = np.asarray(time_a, np.float64), np.asarray(loss_a, np.float64)
    tb, yb = np.asarray(time_b, np.float64), np.asarray(loss_b, np.float64)
    if log_time:
        ka, kb = ta > 0, tb > 0
        xa, xb, ya, yb = np.log10(ta[ka]), np.log10(tb[kb]), ya[ka], yb[kb]
    else:
        xa, xb = ta, tb
    oa, ob = np.argsort(xa), np.argsort(xb)
    xa, ya, xb, yb = xa[oa], ya[oa], xb[ob], yb[ob]
    if log_loss:
        ya, yb = np.log(ya), np.log(yb)
    if bounds is None:
        span = max(xa[-1], xb[-1]) - min(xa[0], xb[0])
        bounds = (-span, span)
    need = max(2, math.ceil(min_overlap * xa.size))

    def objective(shift: float) -> float:
        x = xa - shift
        m = (x >= xb[0]) & (x <= xb[-1])
        if m.sum() < need:
            return math.inf
        return float(np.mean((ya[m] - np.interp(x[m], xb, yb)) ** 2))

    grid = np.linspace(bounds[0], bounds[1], n_grid)
    vals = np.array([objective(s) for s in grid])
    if not np.isfinite(vals).any():
        raise ValueError("the curves never overlap enough within bounds")
    k = int(np.argmin(vals))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, n_grid - 1)]
    res = minimize_scalar(
        objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 * max(1.0, abs(hi - lo))}
    )
    best = float(res.x) if res.fun <= vals[k] else float(grid[k])
    return best, math.sqrt(objective(best))


@dataclass(frozen=True)
class CurveComparison:
    """Summary of several test-loss curves on a common time axis.

    Attributes:
        first_drop_time: per curve, the time of its first drop (nan if none is detected).
        loss_after_first_drop: per curve, the level of the plateau after the first drop (nan
            if none).
        final_loss: per curve, the last loss value.
        difference: for each pair (a, b) in insertion order, loss_a − loss_b `[T]`.
    """

    first_drop_time: dict[str, float]
    loss_after_first_drop: dict[str, float]
    final_loss: dict[str, float]
    difference: dict[tuple[str, str], np.ndarray] = field(repr=False)


def compare_curves(
    time: ArrayLike, curves: Mapping[str, ArrayLike], **detect_kwargs: float
) -> CurveComparison:
    """Compare loss curves sampled at common times, e.g. training, in-context (ICL) and
    in-weight (IWL) test losses (App. G, Fig. 14).

    Args:
        time: `[T]` common sample times.
        curves: name → loss `[T]`, e.g. {"train": …, "icl": …, "iwl": …}.
        **detect_kwargs: passed to `find_plateaus_and_drops`.
    Returns:
        `CurveComparison`.
    """
    t = np.asarray(time, dtype=np.float64)
    first: dict[str, float] = {}
    after: dict[str, float] = {}
    final: dict[str, float] = {}
    arrs = {name: np.asarray(y, dtype=np.float64) for name, y in curves.items()}
    for name, y in arrs.items():
        if y.shape != t.shape:
            raise ValueError(f"curve {name!r} has shape {y.shape}, time has {t.shape}")
        _, drops = find_plateaus_and_drops(t, y, **detect_kwargs)  # type: ignore[arg-type]
        first[name] = drops[0].time if drops else math.nan
        after[name] = drops[0].loss_after if drops else math.nan
        final[name] = float(y[-1])
    diff = {(a, b): arrs[a] - arrs[b] for a, b in combinations(arrs, 2)}
    return CurveComparison(first, after, final, diff)
