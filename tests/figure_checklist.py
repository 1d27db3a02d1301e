"""The figure checklist (issue 41): what a reviewer flags in a saved figure, one rule per function,
applied to every registered figure by the all-figures smoke test (tests/experiments/test_registry_figures.py)
and to the sweep and train plots. Each rule returns the defects it finds, one line each; none
means the figure passes. Importable as `figure_checklist` (pytest puts tests/ on sys.path)."""

from __future__ import annotations

import re

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, FigureBase
from matplotlib.text import Text

#: smallest font size (points at the saved size) of any text a reader must read: ticks, legends,
#: labels, in-cell numbers. Figures are saved at 130 dpi (plots.save), where 7 pt is 12.6 px tall,
#: about the smallest size whose digits stay distinct on screen and in a page's full-width view;
#: journals ask for 5–7 pt at print size, which is read closer than a screen.
FONT_FLOOR_PT = 7.0

#: internal names in titles: a snake_case identifier of lower-case words ("orthogonal_H8",
#: "softmax_merged"; the papers' subscripts H_31, a_α, ATTN_M, KQ_11 pass), a bracketed number
#: list ("[5]") and a "rule:" tag, the forms of run labels and summary keys
_INTERNAL = re.compile(r"\b[a-z]{2,}_[A-Za-z0-9]+|\[\d[\d, .]*\]|\brule:")


def rendered(fig: Figure):
    """A renderer with `fig` drawn (plots.save closed the figure, which detached its canvas)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _data_axes(fig: Figure) -> list[Axes]:
    """Visible axes that draw data (not colour bars, not axes switched off for a legend or text)."""
    bars = {im.colorbar.ax for ax in fig.findobj(Axes) for im in (*ax.images, *ax.collections)
            if getattr(im, "colorbar", None) is not None}
    return [ax for ax in fig.findobj(Axes) if ax.get_visible() and ax.axison and ax not in bars
            and (ax.lines or ax.images or ax.collections or ax.patches)]


def layout(fig: Figure, renderer) -> list[str]:
    """Text running off the canvas (titles, captions, tick labels, legends); heat maps with
    fractional ticks or without a colour bar."""
    box = fig.bbox

    def off(b):
        return b.x0 < box.x0 - 1 or b.y0 < box.y0 - 1 or b.x1 > box.x1 + 1 or b.y1 > box.y1 + 1
    bad = [f"axes {ax.get_title()!r} runs off the canvas" for ax in fig.findobj(Axes)
           if ax.get_visible() and off(ax.get_tightbbox(renderer))]
    # figure-level texts (the suptitles of the figure and its subfigures); axes' texts are in their tightbbox
    texts = [t for f in fig.findobj(FigureBase) for t in (*f.texts, f._suptitle) if t is not None]
    bad += [f"figure text {t.get_text()[:40]!r} runs off the canvas" for t in texts
            if off(t.get_window_extent(renderer))]
    images = [im for ax in fig.findobj(Axes) for im in ax.images]
    with_bar = {(im.get_cmap().name, im.get_clim()) for im in images if im.colorbar is not None}
    for im in images:
        ticks = np.concatenate([im.axes.get_xticks(), im.axes.get_yticks()])
        if not np.allclose(ticks, np.round(ticks)):
            bad.append(f"heat map {im.axes.get_title()!r} has fractional ticks {ticks}")
        if (im.get_cmap().name, im.get_clim()) not in with_bar:
            bad.append(f"heat map {im.axes.get_title()!r} has no colour bar")
    return bad


def crowded_ticks(fig: Figure, renderer) -> list[str]:
    """No two drawn tick labels of one axis overlap (crowded ticks, or a log axis spanning less
    than a decade labelling its minor ticks 4×10⁰ … 8×10⁰)."""
    bad = []
    for ax in fig.findobj(Axes):
        if not (ax.get_visible() and ax.axison):
            continue
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            lo, hi = sorted(axis.get_view_interval())
            boxes = sorted((t.get_window_extent(renderer) for tick in
                            (*axis.get_major_ticks(), *axis.get_minor_ticks())
                            if lo <= tick.get_loc() <= hi
                            for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text()),
                           key=lambda b: (b.x0, b.y0))
            pairs = sum(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
            if pairs:
                bad.append(f"axes {ax.get_title()[:40]!r}: {pairs} overlapping {name} tick labels")
    return bad


def _labelled_elsewhere(ax: Axes, which: str) -> bool:
    """An axis whose tick labels are hidden and that shares its scale with a labelled axes in the
    same row (y) or column (x): the grid's outer label names it."""
    group = (ax.get_shared_y_axes() if which == "y" else ax.get_shared_x_axes()).get_siblings(ax)
    ticks = ax.get_yticklabels() if which == "y" else ax.get_xticklabels()
    if any(t.get_visible() and t.get_text() for t in ticks):
        return False
    label = (lambda a: a.get_ylabel()) if which == "y" else (lambda a: a.get_xlabel())
    return any(label(other) for other in group if other is not ax)


def axis_labels(fig: Figure) -> list[str]:
    """Every data axes (line plots and heat maps alike) names its x and its y axis (an axis it
    hides, as a twin hides its shared x, has nothing to name)."""
    bad = []
    for ax in _data_axes(fig):
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if (axis.get_visible() and not axis.get_label_text().strip()
                    and not _labelled_elsewhere(ax, which)):
                bad.append(f"axes {ax.get_title()!r} has no {which} label")
    return bad


def titles(fig: Figure, run_labels=()) -> list[str]:
    """No internal names in titles and legend entries: run labels (those a reader could not
    guess: with a digit or an underscore), snake_case keys, bracketed lists, "rule:" tags. A
    suptitle's first line is its title; the lines under it are the caption (prose, which may
    name options such as batch_size)."""
    texts = [t.get_text() for ax in fig.findobj(Axes) for t in (ax.title, ax._left_title, ax._right_title)]
    texts += [t.get_text() for ax in fig.findobj(Axes) if ax.get_legend()
              for t in ax.get_legend().get_texts()]
    texts += [f._suptitle.get_text().split("\n")[0] for f in fig.findobj(FigureBase)
              if f._suptitle is not None]
    internal = [lab for lab in run_labels if len(lab) >= 3 and re.search(r"[\d_]", lab)]
    bad = []
    for text in texts:
        hits = _INTERNAL.findall(text) + [lab for lab in internal
                                          if re.search(rf"(?<![\w=]){re.escape(lab)}(?!\w)", text)]
        if hits:
            bad.append(f"title or legend {text[:50]!r} shows internal names {hits}")
    return bad


def _read_texts(fig: Figure) -> list[Text]:
    """The texts a reader reads: of each shown axes its drawn tick labels (major and minor, at
    ticks inside the view), axis labels, titles, texts and legend; of each (sub)figure its texts,
    suptitle and legends."""
    out: list[Text] = []
    for ax in fig.findobj(Axes):
        if not ax.get_visible():
            continue
        out += [*ax.texts, ax.title, ax._left_title, ax._right_title]
        if ax.get_legend():
            out += [*ax.get_legend().get_texts(), ax.get_legend().get_title()]
        if not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for ticks in (axis.get_major_ticks(), axis.get_minor_ticks()):
                out += [label for tick in ticks if lo <= tick.get_loc() <= hi
                        for label in (tick.label1, tick.label2) if label.get_visible()]
            out.append(axis.label)
    for f in fig.findobj(FigureBase):
        out += [*f.texts, *(t for lg in f.legends for t in lg.get_texts())]
        if f._suptitle is not None:
            out.append(f._suptitle)
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def font_sizes(fig: Figure, floor: float = FONT_FLOOR_PT) -> list[str]:
    """Every text a reader reads (ticks, legends, labels, titles, in-cell numbers) at or above
    `floor` points."""
    small: dict[float, list[str]] = {}
    for t in _read_texts(fig):
        if t.get_fontsize() < floor - 1e-9:
            small.setdefault(round(t.get_fontsize(), 1), []).append(t.get_text()[:20])
    return [f"{len(v)} texts at {size} pt < {floor} pt, e.g. {v[:3]}" for size, v in small.items()]


def quick_label(fig: Figure, quick: bool) -> list[str]:
    """A quick figure says QUICK above its panels and what was shrunk ("QUICK (...): 2 of 6 runs;
    steps 300 → 40", or that nothing was); a full one does not say QUICK."""
    text = " ".join(f._suptitle.get_text().replace("\n", " ") for f in fig.findobj(FigureBase)
                    if f._suptitle is not None)
    said = re.search(r"QUICK \([^)]*\): \S|QUICK \(nothing shrunk", text)
    if quick and not said:
        return [f"quick figure's caption does not say QUICK and what was shrunk: {text[:80]!r}"]
    if not quick and "QUICK" in text:
        return ["full figure's caption says QUICK"]
    return []


def theory_overlay(fig: Figure, theory: str | None) -> list[str]:
    """Where the paper overlays theory on this figure (`theory`: the words its legend entry
    carries, e.g. "Eq. 19", declared by the figure's index entry, `Figure.theory`), a plotted line,
    marker set or image of the figure is labelled with them."""
    if theory is None:
        return []
    labels = [a.get_label() for ax in fig.findobj(Axes)
              for a in (*ax.lines, *ax.collections, *ax.images, *ax.patches)]
    labels += [t.get_text() for ax in fig.findobj(Axes) if ax.get_legend()
               for t in ax.get_legend().get_texts()]
    if any(theory in lab for lab in labels):
        return []
    return [f"no plotted theory labelled {theory!r} (the paper overlays it)"]


def defects(fig: Figure, *, quick: bool, theory: str | None, run_labels=()) -> list[str]:
    """Every rule of the checklist applied to `fig`; [] when it passes."""
    renderer = rendered(fig)
    return (layout(fig, renderer) + crowded_ticks(fig, renderer) + axis_labels(fig)
            + titles(fig, run_labels) + font_sizes(fig) + quick_label(fig, quick)
            + theory_overlay(fig, theory))

