"""The all-figures smoke test: every registered figure's quick form reproduces, passes the figure
checklist (tests/figure_checklist.py) with the theory its index entry names plotted
(`Figure.theory`), and gives a number to each claim its quick form measures."""

from __future__ import annotations

import json

import pytest
from figure_checklist import defects

from fastattn.experiments import claims, registry
from helpers import quick_figure


@pytest.mark.parametrize("name", sorted(registry.FIGURES))
def test_reproduce_every_figure_quick(name, tmp_path):
    """Each registered figure's quick run writes its PNG and JSON; the PNG passes the checklist
    (layout, ticks, axis labels, titles, font sizes, the quick label, the paper's theory overlaid).
    The run is the session's one quick reproduction of the figure (`quick_figure`: a test of its
    numbers may have made it first)."""
    entry = quick_figure(name, tmp_path)
    out, doc = entry["out"], entry["doc"]
    assert (out / f"{name}.png").stat().st_size > 0
    assert json.loads((out / f"{name}.json").read_text())["name"] == name
    assert doc["summary"]
    (fig,) = entry["figures"]
    found = defects(fig, quick=True, theory=registry.FIGURES[name].theory, run_labels=list(doc["runs"]))
    assert not found, "\n".join(found)
    # every claim the quick form measures finds its number in this JSON (claims ledger)
    for claim in claims.load():
        if claim.figure == name and claim.quick:
            row = claims.evaluate(claim, out, quick=True)
            assert row["status"] != "not_run", row
