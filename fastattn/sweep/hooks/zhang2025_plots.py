"""Zhang et al. 2025's sweep plots: measured first plateaus against Eq. 72 / Eq. 54 across D and
the init scale, and measured plateau levels against Eq. 19 across N (`fastattn plot --kind`)."""

from __future__ import annotations

import json

import numpy as np

from fastattn.plots import category_colors
from fastattn.sweep.plots import log_ticks


def plot_duration(df, fig):
    """Measured first plateau (time of the first drop) vs Eq. 72 (ATTN_S) / Eq. 54 (ATTN_M)."""
    pred = df["theory_eq72_duration"].astype(float).where(
        df["theory_eq72_duration"].notna(), df["theory_eq54_duration"].astype(float))
    meas = df["first_drop_time"].astype(float)
    ok = np.isfinite(pred) & np.isfinite(meas) & (df["status"] != "error")
    if not ok.any():
        raise ValueError("no run has both a measured first drop and an Eq. 72/54 prediction")
    d = df[ok].assign(pred=pred[ok], meas=meas[ok])
    ax1, ax2 = fig.subplots(1, 2)
    colors = category_colors(d["dim"])
    markers = dict(zip(sorted(d["init_scale"].unique()), "osD^v<>px*", strict=False))
    for (dim, init), g in d.groupby(["dim", "init_scale"]):
        ax1.scatter(g["pred"], g["meas"], color=colors[dim], marker=markers.get(init, "o"), s=18,
                    label=f"D={dim}, init={init:.3g}")
    lo, hi = min(d["pred"].min(), d["meas"].min()), max(d["pred"].max(), d["meas"].max())
    ax1.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="measured = predicted")
    ax1.set(xscale="log", yscale="log", xlabel="predicted plateau duration (Eq. 72 / Eq. 54)",
            ylabel="measured: time of the first drop")
    ax1.legend(fontsize=7, ncol=2)
    for init, g in d.groupby("init_scale"):
        m = g.groupby("dim").apply(lambda x: float(np.median(x["meas"] / x["pred"])),
                                   include_groups=False)
        ax2.plot(m.index, m.values, marker=markers.get(init, "o"), label=f"init={init:.3g}")
    ax2.axhline(1, color="k", lw=0.8, ls="--")
    ax2.set(xscale="log", yscale="log", xlabel="D", ylabel="measured / predicted (median over runs)")
    log_ticks(ax2, "x", d["dim"])
    ax2.legend(fontsize=7)
    fig.suptitle("First plateau duration vs theory")


def plot_levels(df, fig):
    """Measured plateau levels vs the nearest Eq. 19 level, coloured by context length N."""
    d = df[(df["status"] != "error") & df["theory_levels"].notna()]
    pts = []
    for _, row in d.iterrows():
        levels = np.asarray(row["theory_levels"], float)
        for lv in np.asarray(row["plateau_levels"] if row["plateau_levels"] is not None else [], float):
            j = int(np.argmin(np.abs(np.log(levels / lv))))
            pts.append((row["context"], row["dim"], levels[j], lv))
    if not pts:
        raise ValueError("no measured plateau levels with Eq. 19 predictions")
    cols = list(zip(*pts, strict=True))
    ctx = np.array(cols[0], dtype=object)
    dims, pred, meas = (np.array(c, dtype=float) for c in cols[1:])
    ax1, ax2 = fig.subplots(1, 2)
    colors = category_colors(list(ctx))
    for n in colors:
        sel = ctx == n
        ax1.scatter(pred[sel], meas[sel], s=10, color=colors[n], label=f"N={n}")
        n_max = max(json.loads(n)) if isinstance(n, str) else float(n)
        jitter = 1 + 0.02 * dims[sel] / dims.max()        # separate the D values a little
        ax2.scatter(np.full(sel.sum(), n_max) * jitter, (meas[sel] - pred[sel]) / pred[sel], s=10,
                    color=colors[n])
    ax1.plot([pred.min(), pred.max()], [pred.min(), pred.max()], "k--", lw=0.8)
    ax1.set(xscale="log", yscale="log", xlabel="nearest Eq. 19 level L(M_m)",
            ylabel="measured plateau level")
    ax1.legend(fontsize=7)
    ax2.axhline(0, color="k", lw=0.8)
    ax2.set(xscale="log", xlabel="context length N", ylabel="(measured − Eq. 19) / Eq. 19")
    log_ticks(ax2, "x", [max(json.loads(n)) if isinstance(n, str) else float(n) for n in colors])
    fig.suptitle("Plateau levels vs Eq. 19 across N")
