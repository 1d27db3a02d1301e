"""The figure checklist (tests/figure_checklist.py) can fail: a clean figure passes every rule, and
one planted defect per rule is caught by that rule. Cheap: small Agg figures, no training."""

from __future__ import annotations

import numpy as np
import pytest
from figure_checklist import FONT_FLOOR_PT, defects
from matplotlib.figure import Figure

from fastattn import plots

CAPTION = "QUICK (smaller settings; claims measured only at full settings are not run): steps 300 → 40"


def _clean() -> Figure:
    """A loss panel with its theory level, beside a labelled heat map with its colour bar."""
    fig = Figure(figsize=(9, 3.5))
    ax, hx = fig.subplots(1, 2)
    t = np.geomspace(1, 1e3, 50)
    ax.plot(t, 1 / t, label="sampled SGD, H = 2")
    plots.draw_levels(ax, [0.1], label="theory (Eq. 19)")
    ax.set(xscale="log", xlabel="time t", ylabel="loss", title="H = 2")
    ax.legend(fontsize=7)
    plots.heatmap(hx, np.arange(12.0).reshape(3, 4), colorbar="entry", xlabel="key", ylabel="query")
    hx.set_title("KQ of head 1")
    plots.suptitle(fig, "Paper, Fig. 1", CAPTION)
    fig.tight_layout()
    return fig


def _found(fig: Figure, **kw) -> list[str]:
    args = {"quick": True, "theory": "Eq. 19", "run_labels": ["orthogonal_H8"]} | kw
    return defects(fig, **args)


def test_a_clean_figure_passes():
    assert _found(_clean()) == []


def _no_heatmap_ylabel(fig):
    fig.axes[1].set_ylabel("")


def _run_name_title(fig):
    fig.axes[0].set_title("orthogonal_H8: B")


def _cryptic_title(fig):
    fig.axes[0].set_title("conspicuous plateaus [5] (rule: 8)")


def _tiny_legend(fig):
    fig.axes[0].legend(fontsize=FONT_FLOOR_PT - 1)


def _tiny_cell_text(fig):
    fig.axes[1].text(0, 0, "0.31", fontsize=5)


def _not_quick(fig):
    plots.suptitle(fig, "Paper, Fig. 1", "Exact flow at the paper's settings.")


def _no_theory(fig):
    for line in fig.axes[0].lines[1:]:
        line.remove()
    fig.axes[0].legend(fontsize=7)


def _crowded_log_ticks(fig):
    ax = fig.axes[0]
    ax.set_xlim(4, 8)        # under a decade: matplotlib labels the minor ticks 4×10⁰ … 8×10⁰
    ax.tick_params(which="both", labelsize=10)
    fig.set_size_inches(6, 3.5)
    fig.tight_layout()


@pytest.mark.parametrize("plant, rule", [
    (_no_heatmap_ylabel, "no y label"), (_run_name_title, "internal names"),
    (_cryptic_title, "internal names"), (_tiny_legend, "pt <"), (_tiny_cell_text, "pt <"),
    (_not_quick, "does not say QUICK"), (_no_theory, "no plotted theory"),
    (_crowded_log_ticks, "overlapping x tick labels")])
def test_each_planted_defect_is_caught(plant, rule):
    fig = _clean()
    plant(fig)
    found = _found(fig)
    assert any(rule in f for f in found), found


def test_a_full_figure_must_not_say_quick():
    assert any("says QUICK" in f for f in _found(_clean(), quick=False))
