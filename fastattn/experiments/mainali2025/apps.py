"""What the transformer applications of Mainali & Teixeira 2025 (Figs. 5–7; spec §9.6–9.8) share:
crossings and drop windows of training curves, and the spec §8 measures of a run's per-head QK / OV
matrices averaged over layers and heads, with their landmarks on a log-step axis."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from fastattn.analysis import spectral as sp
from fastattn.analysis.heads import head_measures
from fastattn.experiments.recipe import Run
from fastattn.models.transformer import ov_factors, qk_factors

KMAX = 3       # marginalised effective rank: k = 0..KMAX leading modes dropped


def first_crossing(t: np.ndarray, y: np.ndarray, level: float, above: bool = True) -> float | None:
    """The first recorded t at which y ≥ level (above) or y ≤ level; None if never."""
    hit = np.nonzero(y >= level if above else y <= level)[0]
    return float(t[hit[0]]) if hit.size else None


def drop_window(t: np.ndarray, y: np.ndarray, log: bool = True) -> tuple[float, float] | None:
    """Where y falls from its maximum to its final value: the first t after the maximum at which
    y has covered 10 % and 90 % of that fall (of ln y if `log` and y > 0). None: no fall."""
    v = np.log(y) if log and np.all(y > 0) else np.asarray(y, dtype=np.float64)
    top = int(np.argmax(v))
    fall = v[top] - v[-1]
    if fall <= 0:
        return None
    after, tt = v[top:], t[top:]
    lo = tt[np.nonzero(after <= v[top] - 0.1 * fall)[0][0]]
    hi = tt[np.nonzero(after <= v[top] - 0.9 * fall)[0][0]]
    return float(lo), float(hi)


def record_steps(run: Run) -> np.ndarray:
    """The steps `[R]` of a token-transformer run's records, float64: its loss records, which are
    also its parameter snapshots (the recipes take n_snapshots = n_records)."""
    traj = run.traj
    if len(traj.params) != len(traj.step):
        raise ValueError(f"run {run.spec.label!r} has {len(traj.params)} snapshots and "
                         f"{len(traj.step)} records: the head measures need a snapshot at every "
                         "record (n_snapshots = n_records)")
    return traj.step.astype(np.float64)


def head_matrices(run: Run, kind: str) -> np.ndarray:
    """The per-head "qk" or "ov" matrices of a token-transformer run at its snapshots, float64
    `[R, L, H, d, d]`: QK = W_Q W_Kᵀ, OV = W_V W_O (fastattn.models.transformer)."""
    factors = {"qk": qk_factors, "ov": ov_factors}
    if kind not in factors:
        raise ValueError(f"kind must be 'qk' or 'ov'; got {kind!r}")
    model = copy.deepcopy(run.model)
    pairs = [factors[kind](model.load_flat(flat)) for flat in run.traj.params]
    x, y = (np.stack([pair[i] for pair in pairs]) for i in (0, 1))
    return x @ np.swapaxes(y, -1, -2)


def head_summary(run: Run, kind: str) -> dict[str, Any]:
    """Spec §8 measures of the run's per-head `kind` ("qk" / "ov") matrices, each averaged over
    layers and heads: series `[R]` (mer_*: `[R, KMAX+1]`), the steps where the mean normalised
    SubDist first falls below 0.5 and 0.1, and, on the log-step axis, the steepest fall of the
    mean SubDist and effective rank (most negative d/d ln t), the dips / peaks of the mean
    effective rank and the first dip of each marginalised curve (Variant B, mode identity)."""
    t = record_steps(run)
    m = head_measures(head_matrices(run, kind), t, KMAX)
    mean = {k: np.nanmean(v, axis=(1, 2)) for k, v in m.items()}
    keep = t > 0
    x = np.log(t[keep])

    def marks(y: np.ndarray, what: str) -> list[float]:
        return np.exp(sp.landmarks(x, y[keep], what, prominence=0.02 * np.ptp(y[keep]))).tolist()

    def steepest_fall(y: np.ndarray) -> float:
        return float(np.exp(x[np.argmin(np.gradient(y[keep], x))]))

    return {"series": mean,
            "subdist_below_0.5": first_crossing(t, mean["subdist"], 0.5, above=False),
            "subdist_below_0.1": first_crossing(t, mean["subdist"], 0.1, above=False),
            "subdist_steepest_fall": steepest_fall(mean["subdist"]),
            "effective_rank_steepest_fall": steepest_fall(mean["effective_rank"]),
            "effective_rank_dips": marks(mean["effective_rank"], "dip"),
            "effective_rank_peaks": marks(mean["effective_rank"], "peak"),
            "effective_rank_initial_final": [float(mean["effective_rank"][0]),
                                             float(mean["effective_rank"][-1])],
            "mer_mode_first_dips": [(marks(mean["mer_mode"][:, k], "dip") or [None])[0]
                                    for k in range(KMAX + 1)]}


def inside(x: float | None, window: tuple[float, float] | None) -> bool | None:
    """Whether x lies in the window (None when either is missing)."""
    if x is None or window is None:
        return None
    return bool(window[0] <= x <= window[1])
