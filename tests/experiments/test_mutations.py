"""The planted bugs of fastattn/experiments/mutations.py: each applies to today's code, and the CI
subset (one per paper at least) flips a claim when planted in a copy of the package."""

from __future__ import annotations

from pathlib import Path

import pytest

import fastattn
from fastattn import papers
from fastattn.experiments import FIGURES, mutations

PACKAGE = Path(fastattn.__file__).resolve().parent


def test_every_mutation_names_text_that_exists_once():
    """A refactor that moves a planted bug's text must update the list, not silently drop it."""
    keys = [m.key for m in mutations.MUTATIONS]
    assert len(keys) == len(set(keys))
    for m in mutations.MUTATIONS:
        assert (PACKAGE / m.file).read_text().count(m.old) == 1, m.key
        assert m.old != m.new and m.figures and m.description, m.key
        assert all(f in FIGURES and f.startswith(m.paper + "-") for f in m.figures), m.key


def test_every_paper_has_three_kinds_of_planted_bug_and_one_in_ci():
    """Issue 35: at least 3 per paper, spread over the kinds it names; CI runs one per paper."""
    for paper in papers.names():
        mine = [m for m in mutations.MUTATIONS if m.paper == paper]
        assert len({m.kind for m in mine}) >= 3, paper
        assert sum(m.ci for m in mine) == 1, paper
    assert {m.kind for m in mutations.MUTATIONS} == set(mutations.KINDS)


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind='typo' is unknown"):
        mutations.Mutation("k", "he2025", "typo", "theory/he2025.py", "a", "b", ("he2025-e8",), "x")


def test_plant_edits_only_the_copy(tmp_path):
    m = mutations.get(["zhang-cubic-transpose"])[0]
    root = mutations.package_copy(tmp_path)
    mutations.plant(m, root)
    assert m.new in (root / "fastattn" / m.file).read_text()
    assert m.new not in (PACKAGE / m.file).read_text()
    with pytest.raises(ValueError, match="not once"):
        mutations.plant(m, root)                      # the old text is gone now


@pytest.mark.slow
@pytest.mark.parametrize("key", [m.key for m in mutations.MUTATIONS if m.ci])
def test_planted_bug_flips_a_claim(key, tmp_path):
    (result,) = mutations.check(mutations.get([key]), tmp_path)
    assert result["flipped"], mutations.format_result(result)
