"""Plots of a sweep's results table: plateau durations and levels against the theory, heat maps."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm

from fastattn import plots
from fastattn.sweep.store import SWEEP, read_table

KINDS = ("duration", "levels", "heatmap")


def swept_axes(out: Path, df) -> list[str]:
    """Columns that vary across the table, in the sweep's axis order (seed last)."""
    order: list[str] = []
    doc = Path(out) / SWEEP
    if doc.exists():
        order = [k for k, v in json.loads(doc.read_text())["grid"]["axes"].items() if len(v) > 1]
    cols = [c for c in order if c in df and df[c].nunique(dropna=False) > 1]
    return cols


def _label_colors(values):
    vals = sorted(set(values), key=lambda v: (str(type(v)), v))
    cmap = plt.get_cmap("viridis", max(len(vals), 2))
    return {v: cmap(i) for i, v in enumerate(vals)}


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
    colors = _label_colors(d["dim"])
    markers = dict(zip(sorted(d["init"].unique()), "osD^v<>px*", strict=False))
    for (dim, init), g in d.groupby(["dim", "init"]):
        ax1.scatter(g["pred"], g["meas"], color=colors[dim], marker=markers.get(init, "o"), s=18,
                    label=f"D={dim}, init={init:.3g}")
    lo, hi = min(d["pred"].min(), d["meas"].min()), max(d["pred"].max(), d["meas"].max())
    ax1.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="measured = predicted")
    ax1.set(xscale="log", yscale="log", xlabel="predicted plateau duration (Eq. 72 / Eq. 54)",
            ylabel="measured: time of the first drop")
    ax1.legend(fontsize=6, ncol=2)
    for init, g in d.groupby("init"):
        m = g.groupby("dim").apply(lambda x: float(np.median(x["meas"] / x["pred"])),
                                   include_groups=False)
        ax2.plot(m.index, m.values, marker=markers.get(init, "o"), label=f"init={init:.3g}")
    ax2.axhline(1, color="k", lw=0.8, ls="--")
    ax2.set(xscale="log", yscale="log", xlabel="D", ylabel="measured / predicted (median over runs)")
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
    colors = _label_colors(list(ctx))
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
    fig.suptitle("Plateau levels vs Eq. 19 across N")


def plot_heatmap(df, fig, x: str, y: str, value: str):
    """Mean of `value` over runs (seeds, other axes) on the grid of two swept axes."""
    for c in (x, y, value):
        if c not in df:
            raise ValueError(f"no column {c!r} in the table")
    d = df[df["status"] != "error"]
    vals = d[value].astype(float)
    piv = d.assign(_v=vals).pivot_table(index=y, columns=x, values="_v", aggfunc="mean")
    ax = fig.subplots()
    data = piv.values
    positive = np.nanmin(data) > 0 and np.nanmax(data) / max(np.nanmin(data), 1e-300) > 100
    im = ax.imshow(data, origin="lower", aspect="auto", cmap="viridis",
                   norm=LogNorm() if positive else None)
    ax.set_xticks(range(len(piv.columns)), [str(c) for c in piv.columns])
    ax.set_yticks(range(len(piv.index)), [str(c) for c in piv.index])
    ax.set(xlabel=x, ylabel=y, title=f"{value} (mean over the other axes and seeds)")
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            if np.isfinite(data[i, j]):
                ax.text(j, i, f"{data[i, j]:.3g}", ha="center", va="center", fontsize=6, color="w")
    fig.colorbar(im, ax=ax)


def plot_sweep(sweep_dir: str | Path, kind: str, out: str | Path | None = None, *, x: str | None = None,
               y: str | None = None, value: str = "final_loss") -> Path:
    """Draw plot `kind` of the sweep in `sweep_dir` to `out` (default DIR/plot_KIND.png)."""
    df = read_table(sweep_dir)
    fig = plots.plt.figure(figsize=(11, 4.5) if kind != "heatmap" else (7, 5))
    try:
        if kind == "duration":
            plot_duration(df, fig)
        elif kind == "levels":
            plot_levels(df, fig)
        elif kind == "heatmap":
            axes = swept_axes(Path(sweep_dir), df)
            x = x or (axes[0] if axes else None)
            y = y or (axes[1] if len(axes) > 1 else None)
            if x is None or y is None:
                raise ValueError("heatmap needs two swept axes (or --x and --y)")
            plot_heatmap(df, fig, x, y, value)
        else:
            raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    except Exception:
        plots.plt.close(fig)
        raise
    return plots.save(fig, out or Path(sweep_dir) / f"plot_{kind}.png")
