"""Mainali & Teixeira 2025's sweep plot: measured half-times per mode against the paper's closed
form, and final a per mode against the exact optimum (`fastattn plot --kind half_times`)."""

from __future__ import annotations

import numpy as np

from fastattn.sweep.plots import log_ticks


def plot_half_times(df, fig):
    """Left: measured t_half_α vs the paper's (log-log, one colour per mode); right: final a_α /
    exact a*_α over N."""
    cols = sorted((c for c in df if c.startswith("t_half_") and c[7:].isdigit()), key=lambda c: int(c[7:]))
    d = df[df["status"] != "error"]
    if not cols or d.empty:
        raise ValueError("no run with measured half-times (Mainali et al.: wishart_tasks × "
                         "linear_transformer, exact flow)")
    ax1, ax2 = fig.subplots(1, 2)
    lo, hi = np.inf, 0.0
    for c in cols:
        k = c[7:]
        meas, pred = d[c].astype(float), d[f"theory_t_half_{k}"].astype(float)
        ok = np.isfinite(meas) & np.isfinite(pred)
        if ok.any():
            ax1.scatter(pred[ok], meas[ok], s=14, label=f"mode {k}")
            lo, hi = min(lo, pred[ok].min(), meas[ok].min()), max(hi, pred[ok].max(), meas[ok].max())
        ratio = d[f"a_final_{k}"].astype(float) / d[f"theory_a_exact_{k}"].astype(float)
        g = d.assign(r=ratio).groupby("context")["r"].mean()
        ax2.plot(g.index.astype(float), g.values, "o-", ms=3, label=f"mode {k}")
    if hi > 0:
        ax1.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="measured = paper")
    ax1.set(xscale="log", yscale="log", xlabel="paper t_half (Eq. 13, ω = 1)",
            ylabel="measured t_half (exact flow)")
    ax1.legend(fontsize=7, ncol=2)
    ax2.axhline(1, color="k", lw=0.8, ls="--")
    ax2.set(xscale="log", xlabel="N", ylabel="final a / exact a* (mean over the other axes)")
    log_ticks(ax2, "x", d["context"].astype(float))
    ax2.legend(fontsize=7, ncol=2)
    fig.suptitle("Mainali & Teixeira 2025: per-mode half-times and fixed points")
