"""Plots of a sweep's results table: the papers' plots (their hooks) and a heat map of any column."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
from matplotlib.colors import LogNorm

from fastattn import plots
from fastattn.sweep.hooks import plot_kinds
from fastattn.sweep.schema import upgrade_columns
from fastattn.sweep.store import SWEEP, read_table

#: the papers' plot kind -> "module:function", then the paper-independent heat map
PAPER_PLOTS = plot_kinds()
KINDS = (*PAPER_PLOTS, "heatmap")


def swept_axes(out: Path, df) -> list[str]:
    """Columns that vary across the table, in the sweep's axis order (seed last)."""
    order: list[str] = []
    doc = Path(out) / SWEEP
    if doc.exists():
        axes = upgrade_columns(json.loads(doc.read_text())["grid"]["axes"])   # old names too
        order = [k for k, v in axes.items() if len(v) > 1]
    cols = [c for c in order if c in df and df[c].nunique(dropna=False) > 1]
    return cols


def tick_label(v: float) -> str:
    """A short tick label: integers below 10⁶ as written (4, 1024, 65536), else `:.3g` (0.5,
    1e-03, 2.5e+07)."""
    if float(v).is_integer() and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.3g}"


def log_ticks(ax, axis: str, values, max_ticks: int = 8) -> None:
    """Ticks of a log axis at the data's values (at most `max_ticks`, evenly thinned), short
    labels, no minor labels: matplotlib's default labels the minor ticks of a log axis spanning
    less than a decade, and they overlap."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    v = np.unique(np.asarray(values, dtype=float))
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return
    if v.size > max_ticks:
        v = v[np.unique(np.linspace(0, v.size - 1, max_ticks).round().astype(int))]
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(FixedLocator(v))
    a.set_ticklabels([tick_label(x) for x in v])
    a.set_minor_formatter(NullFormatter())


def plot_heatmap(df, fig, x: str, y: str, value: str):
    """Mean of `value` over runs (seeds, other axes) on the grid of two swept axes."""
    for c in (x, y, value):
        if c not in df:
            raise ValueError(f"no column {c!r} in the table")
    d = df[df["status"] != "error"]
    vals = d[value].astype(float)
    piv = d.assign(_v=vals).pivot_table(index=y, columns=x, values="_v", aggfunc="mean")
    if piv.empty:
        raise ValueError(f"no finished run has a value of {value!r}")
    ax = fig.subplots()
    data = piv.values
    positive = np.nanmin(data) > 0 and np.nanmax(data) / max(np.nanmin(data), 1e-300) > 100
    im = ax.imshow(data, origin="lower", aspect="auto", cmap="viridis",
                   norm=LogNorm() if positive else None)
    xl = [tick_label(c) if isinstance(c, (int, float)) else str(c) for c in piv.columns]
    ax.set_xticks(range(len(xl)), xl, rotation=45 if max(map(len, xl)) * len(xl) > 40 else 0,
                  ha="right" if max(map(len, xl)) * len(xl) > 40 else "center")
    ax.set_yticks(range(len(piv.index)),
                  [tick_label(c) if isinstance(c, (int, float)) else str(c) for c in piv.index])
    ax.set(xlabel=x, ylabel=y, title=f"{value} (mean over the other axes and seeds)")
    # annotations: sized to the cell, black on light cells and white on dark ones
    cells = max(data.shape)
    size = 9 if cells <= 6 else 7 if cells <= 12 else 0
    if size:
        shade = im.norm(np.where(np.isfinite(data), data, np.nan))
        for i in range(data.shape[0]):
            for j in range(data.shape[1]):
                if np.isfinite(data[i, j]):
                    ax.text(j, i, f"{data[i, j]:.3g}", ha="center", va="center", fontsize=size,
                            color="k" if shade[i, j] > 0.6 else "w")
    fig.colorbar(im, ax=ax)


def default_path(sweep_dir: str | Path, kind: str) -> Path:
    """Where plot `kind` of the sweep in `sweep_dir` goes unless told: DIR/plot_KIND.png."""
    return Path(sweep_dir) / f"plot_{kind}.png"


def plot_sweep(sweep_dir: str | Path, kind: str, out: str | Path | None = None, *, x: str | None = None,
               y: str | None = None, value: str = "final_loss", table=None) -> Path:
    """Draw plot `kind` of the sweep in `sweep_dir` to `out` (default DIR/plot_KIND.png), from
    `table` (its `read_table`, read here unless given)."""
    df = read_table(sweep_dir) if table is None else table
    fig = plots.plt.figure(figsize=(11, 4.5) if kind != "heatmap" else (7, 5))
    try:
        if kind in PAPER_PLOTS:
            module, _, name = PAPER_PLOTS[kind].partition(":")
            try:
                getattr(importlib.import_module(module), name)(df, fig)
            except KeyError as exc:             # another paper's table
                raise ValueError(f"the table has no column {exc}: no run of the pairs this plot "
                                 "is for") from None
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
    return plots.save(fig, out or default_path(sweep_dir, kind))
