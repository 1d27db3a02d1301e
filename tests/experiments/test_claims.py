"""The claims ledger's rules (fastattn/experiments/claims.py): provenance on every claim, standard
errors in tolerances, and the kind × source × status counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fastattn import papers
from fastattn.experiments import claims
from fastattn.experiments.claims import Claim


def _write_fig(folder: Path, name: str, summary: dict, quick: bool = True) -> None:
    (folder / f"{name}.json").write_text(json.dumps({"name": name, "quick": quick,
                                                     "summary": summary}))


@pytest.mark.parametrize("paper", papers.names())
def test_every_claim_says_where_its_number_comes_from(paper):
    """Each claim names its source and the paper's location; a reproduction measures a run, never
    a `measure` closed form (that is at most a theory check)."""
    mine = claims.load([paper])
    assert mine
    for c in mine:
        assert c.source in claims.SOURCES, (c.key, c.source)
        assert c.where.strip(), c.key
        assert not (c.kind == "reproduction" and c.measure), (
            f"{c.key}: a reproduction reads runs, not the closed form {c.measure}")
        assert not re.search(r"\bspecs?\b", c.claim, re.IGNORECASE), (
            f"{c.key}: claim texts cite the paper, not the specs")


def test_tolerance_in_standard_errors(tmp_path):
    """With `se_field` the tolerance counts standard errors: 0.2430 ± 0.0005 is 4.6 s.e. from
    0.2407 (not reproduced at 3 s.e.), although 1 % relative would pass it."""
    _write_fig(tmp_path, "zhang2025-fig1", {"risk": 0.2430, "risk_se": 0.0005})
    base = dict(paper="p", figure="zhang2025-fig1", field="summary.risk", reason="r",
                se_field="summary.risk_se", source="derived", where="Eq. 1")
    far = claims.evaluate(Claim(key="a", claim="c", paper_value=0.2407, tolerance=3, **base),
                          tmp_path, True)
    assert far["status"] == "not_reproduced"
    assert far["se"] == 0.0005 and far["deviation"] == pytest.approx(0.0023)
    assert far["deviation_se"] == pytest.approx(4.6)
    near = claims.evaluate(Claim(key="b", claim="c", paper_value=0.2425, tolerance=3, **base),
                           tmp_path, True)
    assert near["status"] == "reproduced" and near["deviation_se"] == pytest.approx(1.0)
    relative = claims.evaluate(Claim(key="c", claim="c", paper_value=0.2407, tolerance=0.01,
                                     **{**base, "se_field": ""}), tmp_path, True)
    assert relative["status"] == "reproduced" and relative["se"] is None
    missing = claims.evaluate(Claim(key="d", claim="c", paper_value=0.2407, tolerance=3,
                                    **{**base, "se_field": "summary.nope"}), tmp_path, True)
    assert missing["status"] == "not_run" and missing["not_run_reason"] == "value"


@pytest.mark.parametrize(("compare", "meets"), [
    ("at_most", {0.9: True, 1.1: True, 1.3: False}),      # measured ≤ 1 + 0.2
    ("at_least", {1.1: True, 0.9: True, 0.7: False}),     # measured ≥ 1 − 0.2
    ("approx", {1.15: True, 0.85: True, 1.3: False, 0.7: False}),
])
def test_a_bound_is_met_on_its_side_only(compare, meets):
    """The three comparisons on numbers either side of paper_value 1 with absolute tolerance 0.2
    (an `at_least` that tested `at_most`'s side passed every claim test but the docs ledger's)."""
    claim = Claim(key="k", claim="c", paper="p", figure="f", field="summary.x", paper_value=1.0,
                  tolerance=0.2, relative=False, compare=compare, reason="r", source="derived",
                  where="Eq. 1")
    assert {m: claim.within(m, 1.0) for m in meets} == meets


def test_full_only_claim_in_a_quick_folder_is_not_run_quick(tmp_path):
    _write_fig(tmp_path, "zhang2025-fig1", {"x": 1.0})
    row = claims.evaluate(Claim("p", "k", "c", 1.0, "zhang2025-fig1", "summary.x", reason="r",
                                quick=False), tmp_path, True)
    assert row["status"] == "not_run" and row["not_run_reason"] == "quick"
    assert row["measured"] is None


def test_tally_puts_reproductions_of_paper_numbers_first():
    rows = [{"kind": "theory_check", "source": "derived", "status": "reproduced"},
            {"kind": "reproduction", "source": "spec", "status": "not_run"},
            {"kind": "reproduction", "source": "paper", "status": "reproduced"},
            {"kind": "reproduction", "source": "paper", "status": "not_reproduced"},
            {"kind": "reproduction", "source": "derived", "status": "erratum"}]
    table = claims.tally(rows)
    assert [(t["kind"], t["source"]) for t in table] == [
        ("reproduction", "paper"), ("reproduction", "derived"), ("reproduction", "spec"),
        ("theory_check", "derived")]
    assert table[0]["reproduced"] == 1 and table[0]["not_reproduced"] == 1
    assert table[0]["total"] == 2
    line = claims.headline(rows)
    assert line.startswith("reproductions of paper/derived numbers: 3 (1 reproduced, 1 erratum, "
                           "1 not reproduced)")
    assert "other claims" in line and ": 2 (1 reproduced, 1 not run)" in line


def test_claim_over_seeds_reads_every_seed(tmp_path):
    """A claim with `seeds` reads the median of every seed's value and reports the spread and the
    fraction of seeds within its own tolerance (a seed that measured nothing does not meet it)."""
    _write_fig(tmp_path, "zhang2025-fig4", {
        "count": claims.seed_summary([5, 6, 7]),
        "level": claims.seed_summary([float("nan"), 0.64058, 0.6406, 0.7])})
    base = dict(paper="p", figure="zhang2025-fig4", reason="r", seeds=True, source="derived",
                where="Eq. 19")
    eight = claims.evaluate(Claim(key="a", claim="c", paper_value=8, field="summary.count",
                                  tolerance=0, relative=False, **base), tmp_path, True)
    assert eight["measured"] == 6 and eight["status"] == "not_reproduced"
    assert eight["seeds"] == {"n": 3, "measured": 3, "min": 5, "max": 7, "fraction_meeting": 0.0}
    six = claims.evaluate(Claim(key="b", claim="c", paper_value=6, field="summary.count",
                                tolerance=0, relative=False, **base), tmp_path, True)
    assert six["status"] == "reproduced"
    assert six["seeds"]["fraction_meeting"] == pytest.approx(1 / 3)
    assert six["note"].startswith("median of 3 of 3 runs (range 5 to 7); 1 of 3 meet the claim")
    level = claims.evaluate(Claim(key="c", claim="c", paper_value=0.64058, field="summary.level",
                                  tolerance=5e-5, **base), tmp_path, True)
    assert level["measured"] == pytest.approx(0.6406) and level["status"] == "reproduced"
    assert level["seeds"]["measured"] == 3 and level["seeds"]["fraction_meeting"] == 0.5
    with pytest.raises(ValueError, match="seeds"):
        Claim(key="d", claim="c", paper_value=1, field="summary.count", se_field="summary.se",
              **base)


@pytest.mark.parametrize("paper", papers.names())
def test_no_claim_reads_a_chosen_seed(paper):
    """A claim reads every seed of its figure (a seed summary, a median, a fraction), never one
    run picked by its seed."""
    for c in claims.load([paper]):
        assert not re.search(r"seed\d", c.field), (c.key, c.field)
