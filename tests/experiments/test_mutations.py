"""The planted bugs each paper's manifest lists (`fastattn.papers`, field `mutations`): each applies
to today's code, and the CI subset (one per paper) flips a claim when planted in a copy of the
package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fastattn
from fastattn import papers
from fastattn.experiments import FIGURES, claims, mutations
from helpers import quick_figure

PACKAGE = Path(fastattn.__file__).resolve().parent
MANIFESTS = papers.manifests()


def _listed(paper: papers.Paper) -> tuple[mutations.Mutation, ...]:
    return papers.resolve(paper.mutations) if paper.mutations else ()


@pytest.mark.parametrize("paper", MANIFESTS, ids=lambda p: p.name)
def test_every_mutation_names_text_that_exists_once(paper):
    """A refactor that moves a planted bug's text must update the paper's list, not silently drop
    it."""
    for m in _listed(paper):
        assert mutations.source(m.module)[1].read_text().count(m.old) == 1, m.key
        assert m.old != m.new and m.description, m.key
        assert m.paper == paper.name and all(f in FIGURES for f in m.figures), m.key


@pytest.mark.parametrize("paper", MANIFESTS, ids=lambda p: p.name)
def test_every_paper_has_three_kinds_of_planted_bug_and_one_in_ci(paper):
    """Issue 35: at least 3 per paper, spread over the kinds it names; CI runs one per paper."""
    mine = _listed(paper)
    assert len({m.kind for m in mine}) >= 3
    assert sum(m.ci for m in mine) == 1


def test_the_planted_bugs_cover_every_kind_once_collected():
    declared = mutations.declared()
    assert [m.key for m in mutations.get()] == list(declared)
    assert {m.kind for m in declared.values()} == set(mutations.KINDS)
    assert len(declared) == sum(len(_listed(p)) for p in MANIFESTS)    # no key declared twice


def test_an_unknown_kind_or_a_figure_of_two_papers_is_refused():
    with pytest.raises(ValueError, match="kind='typo' is unknown"):
        mutations.Mutation("k", "typo", "fastattn.theory.he2025", "a", "b", ("he2025-e8",), "x")
    with pytest.raises(ValueError, match="all of one paper"):
        mutations.Mutation("k", "sampler", "fastattn.theory.he2025", "a", "b",
                           ("he2025-e8", "zhang2025-fig1"), "x")


def test_a_module_named_by_a_file_or_not_found_is_refused():
    with pytest.raises(ValueError, match=re.escape("module='theory/he2025.py' is not an import path")):
        mutations.Mutation("k", "sampler", "theory/he2025.py", "a", "b", ("he2025-e8",), "x")
    for module in ("fastattn.theory.nowhere", "fastattn.theory.he2025.sub", "no_such_package"):
        with pytest.raises(ValueError, match=re.escape(f"module {module!r} is not found")):
            mutations.source(module)


def test_a_mutation_listed_by_another_papers_manifest_is_refused(monkeypatch):
    stray = mutations.Mutation("stray", "sampler", "fastattn.theory.he2025", "a", "b", ("he2025-e8",), "x")
    monkeypatch.setattr(papers, "objects", lambda field: [(papers.get("zhang2025"), (stray,))])
    with pytest.raises(ValueError, match="listed by paper zhang2025: list it in he2025's manifest"):
        mutations.declared()


def test_plant_edits_only_the_copy(tmp_path):
    m = mutations.get(["zhang-cubic-transpose"])[0]
    root = mutations.package_copy(tmp_path)
    mutations.plant(m, root)
    original = mutations.source(m.module)[1]
    assert original == PACKAGE / "models" / "cubic_mlp.py"
    assert m.new in (root / "fastattn" / "models" / "cubic_mlp.py").read_text()
    assert m.new not in original.read_text()
    with pytest.raises(ValueError, match="not once"):
        mutations.plant(m, root)                      # the old text is gone now


@pytest.mark.slow
@pytest.mark.parametrize("paper", [p for p in MANIFESTS if any(m.ci for m in _listed(p))],
                         ids=lambda p: p.name)
def test_planted_bug_flips_a_claim(paper, tmp_path):
    """The paper's CI bug, planted in a copy, flips a claim of its figures. The unplanted ledger
    rows are those of the session's quick figures (`quick_figure`, which the all-figures smoke
    test reproduces anyway), so only the planted copy runs here."""
    (m,) = [m for m in _listed(paper) if m.ci]
    baseline = [row for name in m.figures
                for row in claims.ledger(quick_figure(name, tmp_path / "baseline")["out"],
                                         [c for c in claims.load([paper.name]) if c.figure == name])]
    (result,) = mutations.check([m], tmp_path / "planted", baseline=baseline)
    assert result["flipped"], mutations.format_result(result)
