"""Matplotlib helpers shared by the CLI, the figure recipes and the sweeps (files only).

Importing this module leaves the caller's matplotlib backend alone (a notebook keeps its inline
plots); the CLI selects Agg for itself, and matplotlib falls back to Agg where no display exists."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from fastattn.outputs import Output, OutputError
from fastattn.training.records import atomic_write
from fastattn.training.trajectory import RECORD_TIME, Trajectory


def loss_axes(ax: plt.Axes, log_time: bool = True, log_loss: bool = False,
              xlabel: str = RECORD_TIME) -> plt.Axes:
    if log_time:
        ax.set_xscale("log")
    if log_loss:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3, which="both")
    return ax


def short_log_ticks(axis) -> None:
    """Label a log `axis` (`ax.xaxis`, `ax.yaxis`) at 1, 2 and 5 × 10^k in plain numbers (0.2,
    5, 1e+03) and leave its minor ticks unlabelled: on a span under two decades matplotlib labels
    the minor ticks as 2×10⁰ … 9×10⁰, and they overlap."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def plot_loss(ax: plt.Axes, traj: Trajectory, label: str | None = None, x: str = "time",
              **kw) -> None:
    """Draw a trajectory's loss against time (or `x="step"`), skipping the t = 0 point on log axes."""
    xs = np.asarray(traj.time if x == "time" else traj.step, dtype=float)
    keep = xs > 0 if ax.get_xscale() == "log" else np.ones(len(xs), bool)
    ax.plot(xs[keep], traj.loss[keep], label=label, **kw)


def draw_levels(ax: plt.Axes, levels: Sequence[float], label: str = "theory", **kw) -> None:
    """Horizontal dashed lines at predicted plateau levels."""
    style = {"color": "0.3", "ls": "--", "lw": 0.8} | kw
    for i, level in enumerate(levels):
        ax.axhline(level, label=label if i == 0 else None, **style)


def heatmap(ax: plt.Axes, values: np.ndarray, xticklabels: Sequence[str] | None = None,
            yticklabels: Sequence[str] | None = None, colorbar: str | None = "", tick_step: int = 1,
            *, xlabel: str, ylabel: str, **kw):
    """`values` `[rows, cols]` as an image with a tick on the first and every `tick_step`-th row and
    column (1, step, 2·step, … counting from 1; labelled by that count unless labels are given),
    its columns named `xlabel` and its rows `ylabel` (a matrix's index is as unreadable as a
    curve's axis without them) and, unless `colorbar` is None, a colour bar labelled `colorbar`.
    `kw` go to imshow."""
    rows, cols = np.shape(values)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    im = ax.imshow(values, **({"cmap": "viridis", "aspect": "auto"} | kw))
    for set_ticks, n, labels in ((ax.set_xticks, cols, xticklabels), (ax.set_yticks, rows, yticklabels)):
        at = sorted({0, *range(tick_step - 1, n, tick_step)})   # one per row (step 1) or 1, 5, 10, …
        labels = list(labels) if labels is not None else range(1, n + 1)
        set_ticks(at, [labels[i] for i in at])
    if colorbar is not None:
        ax.figure.colorbar(im, ax=ax, label=colorbar)
    return im


def suptitle(fig: plt.Figure, title: str, caption: str, fontsize: float = 8) -> None:
    """`title` and `caption` above the panels, the caption wrapped to the figure's width (one long
    line would run off both edges)."""
    chars = int(fig.get_figwidth() * 72 / (0.6 * fontsize))      # a glyph is about 0.6 em wide
    fig.suptitle("\n".join([title, *textwrap.wrap(caption, chars)]), fontsize=fontsize)


def category_colors(values) -> dict:
    """A viridis colour for each distinct value (sorted; mixed types grouped by type)."""
    vals = sorted(set(values), key=lambda v: (str(type(v)), v))
    cmap = plt.get_cmap("viridis", max(len(vals), 2))
    return {v: cmap(i) for i, v in enumerate(vals)}


def save(fig: plt.Figure, path: str | Path, output: Output | None = None) -> Path:
    """Draw `fig` into the PNG `path` through a temporary name renamed into place (a failed write
    leaves the old file whole), never through a symlink at `path` (refused); with `output` (the
    folder's `fastattn.outputs.Output`), only over a file fastattn wrote, and entered in its
    manifest."""
    path = Path(path)
    if path.is_symlink():
        raise OutputError(f"{path} is a symlink; fastattn writes no figure through links: remove "
                          "the link or give another --out")
    if fig.get_layout_engine() is None:   # a figure made with layout="constrained" lays itself out
        fig.tight_layout()
    try:
        def draw(fh) -> None:
            fig.savefig(fh, dpi=130, format="png")

        if output is not None:
            output.write(path, draw, "wb")
        else:
            atomic_write(path, draw, "wb")
    finally:
        plt.close(fig)
    return path
