"""Matplotlib helpers shared by the CLI, the figure recipes and the sweeps (files only).

Importing this module leaves the caller's matplotlib backend alone (a notebook keeps its inline
plots); the CLI selects Agg for itself, and matplotlib falls back to Agg where no display exists."""

from __future__ import annotations

import errno
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from fastattn.outputs import Output, OutputError, probe
from fastattn.training.records import atomic_write
from fastattn.training.trajectory import RECORD_TIME, Trajectory
from fastattn.versions import versions


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


#: the PNG text chunk fastattn signs its figures with: a file given as --out outside a folder
#: fastattn keeps a manifest of is replaced only if it carries it
SIGNATURE = ("Software", "fastattn")


def drawn_by_fastattn(path: Path) -> bool:
    """Whether `path` is a PNG that carries fastattn's signature (its text chunks are read, never
    its pixels)."""
    from PIL import Image

    try:
        with Image.open(path, formats=["PNG"]) as im:
            return str(im.text.get(SIGNATURE[0], "")).startswith(SIGNATURE[1] + " ")
    except OSError:                                   # not a PNG, unreadable
        return False


def check_target(path: Path) -> None:
    """Refuse a figure path fastattn may not write: a symlink, a folder, a file it did not draw, a
    folder it cannot create a file in. Raises OutputError naming the path and the way out."""
    if path.is_symlink():
        raise OutputError(f"{path} is a symlink; fastattn writes no figure through links: remove "
                          "the link or give another --out")
    if path.exists() and not (path.is_file() and drawn_by_fastattn(path)):
        raise OutputError(f"{path} exists and is not a figure fastattn drew: it is left alone; move "
                          "it away or give another --out")
    try:
        probe(path.parent)
    except OSError as exc:
        why = (f"{exc.filename} is not a folder" if exc.errno in (errno.EEXIST, errno.ENOTDIR)
               else f"{path.parent} is unwritable ({exc.strerror})")
        raise OutputError(f"cannot write the figure {path}: {why}; give another --out") from None


def save(fig: plt.Figure, path: str | Path, output: Output | None = None) -> Path:
    """Draw `fig` into the PNG `path`, signed (`SIGNATURE`), through a temporary name renamed into
    place (a failed write leaves the old file whole). With `output` (the folder's
    `fastattn.outputs.Output`), only over a file fastattn wrote, and entered in its manifest;
    without, only where `check_target` allows."""
    path = Path(path)
    if output is None:
        check_target(path)
    if fig.get_layout_engine() is None:   # a figure made with layout="constrained" lays itself out
        fig.tight_layout()
    try:
        def draw(fh) -> None:
            fig.savefig(fh, dpi=130, format="png",
                        metadata={SIGNATURE[0]: f"{SIGNATURE[1]} {versions()['fastattn']}"})

        if output is not None:
            output.write(path, draw, "wb")
        else:
            atomic_write(path, draw, "wb")
    finally:
        plt.close(fig)
    return path
