"""The paper manifests (`fastattn.papers`): every path of every manifest imports and declares what
its field says, under the paper's own name; manifests come from the built-in list, the
`fastattn.papers` entry points and `register`, in that order."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest

from fastattn import papers
from fastattn.papers import Paper


@pytest.fixture
def fresh(monkeypatch):
    """A registry that has discovered nothing yet (the built-in modules stay imported)."""
    monkeypatch.setattr(papers, "REGISTRY", papers._Registry())


@pytest.mark.parametrize("paper", papers.manifests(), ids=lambda p: p.name)
def test_each_manifest_names_its_own_parts(paper):
    from fastattn.configs import MODEL_CARDS, TASK_CARDS
    from fastattn.experiments.claims import Claim
    from fastattn.experiments.recipe import Figure
    from fastattn.sweep.hooks import Hooks

    for paths in paper.paths().values():
        for path in paths:
            papers.resolve(path)
    cards = [c for c in (*MODEL_CARDS.values(), *TASK_CARDS.values())
             if paper.name in [p.strip() for p in c.paper.split(",")]]
    assert cards, f"{paper.name} declares no card"
    figures = papers.resolve(paper.figures)
    assert figures and all(isinstance(f, Figure) and f.name.startswith(paper.name + "-")
                           for f in figures)
    claims = papers.resolve(paper.claims)
    assert all(isinstance(c, Claim) and c.paper == paper.name for c in claims)
    hooks = papers.resolve(paper.hooks)
    assert isinstance(hooks, Hooks) and hooks.paper == paper.name


def test_the_builtin_papers_come_in_the_listed_order():
    assert papers.names()[:len(papers.BUILTIN)] == tuple(
        papers.resolve(p).name for p in papers.BUILTIN)


def _entry_point(tmp_path, monkeypatch, name: str, module: str) -> metadata.EntryPoint:
    """An installed paper's entry point: a module `module` (on sys.path) holding PAPER."""
    (tmp_path / f"{module}.py").write_text(
        "from fastattn.papers import Paper\n"
        f"PAPER = Paper({name!r}, 'an installed paper', theory=('math',))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    return metadata.EntryPoint(name, f"{module}:PAPER", papers.GROUP)


def test_an_installed_paper_is_found_by_its_entry_point(fresh, tmp_path, monkeypatch):
    ep = _entry_point(tmp_path, monkeypatch, "installed2026", "installed_paper_manifest")
    asked = []

    def entry_points(group):
        asked.append(group)
        return [ep]

    monkeypatch.setattr(papers.metadata, "entry_points", entry_points)
    assert papers.names()[-1] == "installed2026"
    assert papers.get("installed2026").title == "an installed paper"
    papers.names()
    assert asked == [papers.GROUP]                         # discovered once per process


def test_two_manifests_of_one_name_are_refused(fresh, tmp_path, monkeypatch):
    ep = _entry_point(tmp_path, monkeypatch, "zhang2025", "clashing_paper_manifest")
    monkeypatch.setattr(papers.metadata, "entry_points", lambda group: [ep])
    with pytest.raises(ValueError, match="paper 'zhang2025' has two manifests"):
        papers.names()


def test_a_paper_registered_at_run_time_comes_last_and_can_be_removed(fresh):
    paper = Paper("runtime2026", "a notebook's paper")
    before = papers.generation()
    assert papers.register(paper) is paper and papers.register(paper) is paper
    assert papers.names()[-1] == "runtime2026" and papers.generation() == before + 1
    with pytest.raises(ValueError, match="'runtime2026' has two manifests"):
        papers.register(Paper("runtime2026", "another"))
    papers.unregister("runtime2026")
    assert "runtime2026" not in papers.names()
    with pytest.raises(ValueError, match="'zhang2025' was not added by register"):
        papers.unregister("zhang2025")


def test_modules_are_imported_when_their_field_is_loaded_not_before(fresh, tmp_path, monkeypatch):
    (tmp_path / "lazy_paper_models.py").write_text("IMPORTS = []\nIMPORTS.append(1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    papers.register(Paper("lazy2026", "lazy", models=("lazy_paper_models",)))
    assert "lazy_paper_models" not in sys.modules                  # registering imports nothing
    papers.load("models")
    papers.load("models")
    assert sys.modules.pop("lazy_paper_models").IMPORTS == [1]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"name": "my-paper"}, "paper name 'my-paper': use letters, digits and underscores"),
    ({"models": "pkg.models"}, "models must be a tuple of module paths"),
    ({"figures": "pkg.figures"}, "figures must be 'module:attr' or None"),
])
def test_a_malformed_manifest_is_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Paper(**({"name": "ok", "title": "t"} | kwargs))


def test_collect_walks_every_paper_and_refuses_a_key_listed_twice(monkeypatch):
    """The one walk behind the figure index and the planted bugs (`papers.collect`)."""
    zhang, he = papers.get("zhang2025"), papers.get("he2025")
    listed = [(zhang, ("a", "b")), (he, ("c",))]
    monkeypatch.setattr(papers, "objects", lambda field: listed)
    seen = []
    table = papers.collect("figures", str.upper, lambda paper, e: seen.append((paper.name, e)))
    assert table == {"A": "a", "B": "b", "C": "c"}
    assert seen == [("zhang2025", "a"), ("zhang2025", "b"), ("he2025", "c")]
    listed.append((he, ("a",)))
    with pytest.raises(ValueError, match="figures: 'A' is listed twice; rename one"):
        papers.collect("figures", str.upper, lambda paper, e: None)
