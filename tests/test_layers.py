"""Imports point one way: no module imports up the layer order of docs/conventions.md ("Layers").

Walks the source of every module of fastattn/ and triton_kernels/ with `ast` (module-level and function-level
imports alike, `if TYPE_CHECKING:` blocks excepted: they never run), so an import that only runs on
some path is caught too."""

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fastattn"
KERNELS = ROOT / "triton_kernels"  # beside the package in the repository, installed inside it
CONVENTIONS = ROOT / "docs" / "conventions.md"

#: Up-imports still in the tree, each with the change that removes it. The test also fails when one
#: is gone, so that this list only shrinks.
PENDING: dict[tuple[str, str], str] = {}


def layers() -> list[list[str]]:
    """The rows of the Layers table, top (lowest layer) first: each a list of module names."""
    text = CONVENTIONS.read_text()
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    return [re.findall(r"`([\w.]+)`", row.split("|")[2]) for row in rows]


def labels() -> list[str]:
    """The layers' names (the table's first column), in the order of `layers()`."""
    section = CONVENTIONS.read_text().split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    return [line.split("|")[1].strip() for line in section.splitlines()
            if line.startswith("| ") and "`" in line]


def rank_of(module: str, table: list[list[str]]) -> int | None:
    """The layer index of `module`: its most specific entry (`fastattn` matches only itself)."""
    best, rank = "", None
    for i, names in enumerate(table):
        for name in names:
            covers = module == name or (name != "fastattn" and module.startswith(name + "."))
            if covers and len(name) > len(best):
                best, rank = name, i
    return rank


def sources() -> list[Path]:
    return [*PACKAGE.rglob("*.py"), *KERNELS.rglob("*.py")]


def module_name(path: Path) -> str:
    if path.is_relative_to(KERNELS):
        parts = ("fastattn", "triton_kernels", *path.relative_to(KERNELS).with_suffix("").parts)
    else:
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """A source module, a package or a compiled extension (its stub `.pyi` is in the tree)."""
    parts = name.split(".")
    if parts[:2] == ["fastattn", "triton_kernels"]:
        path = KERNELS.joinpath(*parts[2:])
    else:
        path = PACKAGE.parent.joinpath(*parts)
    return any(path.with_suffix(ext).exists() for ext in (".py", ".pyi")) or \
        (path / "__init__.py").exists()


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported(path: Path, typing: bool = False) -> set[str]:
    """The fastattn modules `path` imports: `from fastattn import x` is module fastattn.x when x is a
    module, else a name of the fastattn namespace; relative imports are resolved. `typing`: count
    the imports under `if TYPE_CHECKING:` too."""
    tree = ast.parse(path.read_text())
    skip = set() if typing else {id(n) for node in ast.walk(tree) if _type_checking_only(node)
                                 for n in ast.walk(node) if n is not node}
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if is_module(sub) else base)
    return {m for m in out if m == "fastattn" or m.startswith("fastattn.")}


def edges(typing: bool = False) -> list[tuple[str, str]]:
    return sorted((module_name(p), target) for p in sources() for target in imported(p, typing))


def circles(pairs: list[tuple[str, str]]) -> set[tuple[str, ...]]:
    """The import circles of the graph `pairs` (src, dst): its strongly connected components of
    more than one module, each sorted (Tarjan's algorithm, iterative)."""
    graph: dict[str, list[str]] = {}
    for src, dst in pairs:
        graph.setdefault(src, []).append(dst)
        graph.setdefault(dst, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[tuple[str, ...]] = set()
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.add(tuple(sorted(component)))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_table_places_every_module_once():
    table = layers()
    assert len(table) >= 8, "the Layers table of docs/conventions.md was not found"
    names = [n for row in table for n in row]
    assert len(names) == len(set(names)), "a module is in two layers"
    unplaced = sorted({module_name(p) for p in sources()
                       if rank_of(module_name(p), table) is None})
    assert not unplaced, f"give these modules a layer in docs/conventions.md (Layers): {unplaced}"


def test_no_import_runs_up_a_layer():
    table, names = layers(), labels()
    unplaced = sorted({dst for _, dst in edges() if rank_of(dst, table) is None})
    assert not unplaced, f"give these modules a layer in docs/conventions.md (Layers): {unplaced}"
    found = {(src, dst) for src, dst in edges() if rank_of(dst, table) > rank_of(src, table)}
    up = sorted(found - set(PENDING))
    lines = [f"{src} ({names[rank_of(src, table)]}) imports {dst} ({names[rank_of(dst, table)]})"
             for src, dst in up]
    assert not up, "imports up the layer order (docs/conventions.md, Layers):\n" + "\n".join(lines)
    gone = sorted(set(PENDING) - found)
    assert not gone, f"no longer imported: remove from PENDING: {gone}"


@pytest.mark.parametrize(("package", "forbidden"), [
    ("fastattn.theory", ("fastattn.population", "fastattn.models", "fastattn.training",
                         "fastattn.tasks", "fastattn.ops")),
    ("fastattn.models", ("fastattn.analysis",)),
    ("fastattn.population", ("fastattn.tasks", "fastattn.training")),
    ("fastattn.sweep", ("fastattn.cli",)),
    ("fastattn.configs", tuple(f"fastattn.{m}" for m in ("ops", "population", "tasks", "models",
                                                         "training", "experiments", "sweep"))),
    ("fastattn.papers", tuple(f"fastattn.{m}" for m in ("configs", "ops", "population", "tasks",
                                                        "models", "training"))),
])
def test_the_issues_named_rules(package, forbidden):
    """The rules issues 24 and 39 name, whatever the table says: theory is pure formulas, models
    import no analysis, the sweep imports no CLI module (fastattn.cli; the shared option table is
    not one), the cards are a leaf (building a run from them is the trainer's,
    `fastattn.training.build`) and the paper manifests import no family."""
    bad = [(s, d) for s, d in edges() if (s == package or s.startswith(package + "."))
           and any(d == f or d.startswith(f + ".") for f in forbidden)]
    assert not bad


#: the module that reads each field of a paper's manifest (`fastattn.papers`), importing its paths
FIELD_READER = {"cards": "fastattn.configs", "tasks": "fastattn.tasks", "models": "fastattn.models",
                "objectives": "fastattn.population", "theory": "fastattn.theory",
                "figures": "fastattn.experiments", "claims": "fastattn.experiments",
                "mutations": "fastattn.experiments", "hooks": "fastattn.sweep"}


def test_each_manifest_path_sits_in_the_layer_that_reads_it():
    """A manifest's paths are imports the walker cannot see: `fastattn.papers` makes them with
    importlib on behalf of the registry that reads the field (the model registry imports the
    `models` paths, the figure index the `figures` ones). Each built-in path is a module of that
    registry's layer, so the plug-in route opens no arrow up the layers; and a manifest module
    imports only `fastattn.papers` (the CLI reads manifests before any family)."""
    from fastattn import papers

    table, names = layers(), labels()
    assert set(FIELD_READER) == {*papers.MODULE_FIELDS, *papers.OBJECT_FIELDS}
    bad = [f"{paper.name}.{field}: {path} ({names[rank_of(path.split(':')[0], table)]}), read by "
           f"{FIELD_READER[field]} ({names[rank_of(FIELD_READER[field], table)]})"
           for paper in papers.manifests() for field, paths in paper.paths().items()
           for path in paths
           if rank_of(path.split(":")[0], table) != rank_of(FIELD_READER[field], table)]
    assert not bad, "manifest paths outside the layer that imports them:\n" + "\n".join(bad)
    manifests = [p for p in sources() if module_name(p).startswith("fastattn.papers.")]
    assert len(manifests) == len(papers.BUILTIN)
    assert all(imported(p) == {"fastattn.papers"} for p in manifests)


def test_the_walker_sees_function_level_and_relative_imports(tmp_path, monkeypatch):
    """The walker itself: a function-level import and a relative one are both found, and an
    import under `if TYPE_CHECKING:` is not (it never runs)."""
    pkg = tmp_path / "fastattn" / "theory"
    pkg.mkdir(parents=True)
    (tmp_path / "fastattn" / "__init__.py").write_text("")
    (tmp_path / "fastattn" / "models.py").write_text("")
    (tmp_path / "fastattn" / "training.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "x.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from fastattn import training\n"
                              "def f():\n    from .. import models\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "fastattn")
    assert imported(pkg / "x.py") == {"fastattn.models"}


def test_no_import_circle():
    """No module imports itself round a circle, counting the imports under `if TYPE_CHECKING:`:
    a type-only circle (the engines importing `TrainConfig` back from the trainer) is still two
    modules that cannot be understood, or moved, one without the other."""
    found = sorted(circles(edges(typing=True)))
    assert not found, "import circles (the modules of each line import each other, round a " \
        "circle):\n" + "\n".join(", ".join(c) for c in found)


def test_the_circle_finder():
    """A circle through three modules is found once, a chain is not a circle."""
    assert circles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")]) == {("a", "b", "c")}
    assert circles([("a", "b"), ("b", "c")]) == set()
