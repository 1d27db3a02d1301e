"""Planted bugs that the claims ledger must catch: `fastattn report DIR --mutations`.

Each `Mutation` is one exact text substitution in one module, named by its import path (a
moment, a model's forward, an objective's term, a theory constant, a time unit, a sampler): a paper
installed as its own package plants bugs in its own modules. Each paper lists its own in a module
its manifest names (`fastattn.papers`, field `mutations`, e.g.
fastattn/experiments/zhang2025/mutations.py); `declared()` collects them. `check` copies the
imported `fastattn` (and its kernels, beside it) and the top-level packages the bugs touch to a
temporary folder, never touching the originals, plants the bug there, reruns the quick figures that
depend on it in a fresh Python process whose path starts at the copy (so the copies shadow the
installed packages), and lists the claims whose status differs from the same figures run by an
unplanted copy. A bug that flips no claim is a hole in the ledger.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the kinds of planted bug issue 35 asks for, each paper's bugs spread over several of them
KINDS = ("moment", "model's forward", "objective's term", "theory constant", "time unit", "sampler")


@dataclass(frozen=True)
class Mutation:
    """One planted bug.

    Attributes:
        key: short id, e.g. "zhang-cubic-transpose".
        kind: one of `KINDS`.
        module: the module to patch, by its import path (e.g. "fastattn.models.cubic_mlp"); found
            without importing it (`source`).
        old: the exact text replaced; it must occur exactly once in the file.
        new: its replacement (the bug).
        figures: the quick figures to rerun (those whose claims should flip), all of one paper:
            the paper whose claims should catch the bug, and whose manifest lists it.
        description: the bug in words.
        ci: whether the CI subset (tests/experiments/test_mutations.py) runs it: one per paper,
            the cheapest to check.
    """

    key: str
    kind: str
    module: str
    old: str
    new: str
    figures: tuple[str, ...]
    description: str
    ci: bool = False

    def __post_init__(self) -> None:
        if not all(part.isidentifier() for part in self.module.split(".")):
            raise ValueError(f"mutation {self.key}: module={self.module!r} is not an import path; "
                             "name the module, e.g. 'fastattn.models.cubic_mlp'")
        if self.kind not in KINDS:
            raise ValueError(f"mutation {self.key}: kind={self.kind!r} is unknown; use one of "
                             f"{list(KINDS)}")
        if not self.figures or len({name.partition("-")[0] for name in self.figures}) != 1:
            raise ValueError(f"mutation {self.key}: figures={list(self.figures)} must name at "
                             "least one figure, all of one paper ('<paper>-<figure>')")

    @property
    def paper(self) -> str:
        """The paper of its figures (named '<paper>-<figure>'): the one whose claims catch it."""
        return self.figures[0].partition("-")[0]


def declared() -> dict[str, Mutation]:
    """Every paper's planted bugs by key, in paper order: the tuple each manifest names under
    `mutations` (`fastattn.papers.collect`). ValueError for a bug whose figures are another
    paper's, or a key declared twice."""
    from fastattn import papers

    def check(paper: papers.Paper, m: Mutation) -> None:
        if m.paper != paper.name:
            raise ValueError(f"mutation {m.key} (figures {list(m.figures)}) is listed by "
                             f"paper {paper.name}: list it in {m.paper}'s manifest")

    return papers.collect("mutations", lambda m: m.key, check)


def get(keys: Iterable[str] | None = None) -> list[Mutation]:
    """The mutations named by `keys` (default: all, `declared()`); ValueError naming an unknown
    key."""
    by_key = declared()
    if keys is None:
        return list(by_key.values())
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ValueError(f"unknown mutation(s) {unknown}; known: {sorted(by_key)}")
    return [by_key[k] for k in keys]


def source(module: str) -> tuple[Path, Path]:
    """(the folder on the path that holds `module`'s top-level package, the module's file), found
    by the import system's path finder without importing the module or its packages (a paper's
    `__init__` may import torch). ValueError naming a module that is not found."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)           # a top-level name: nothing is imported
    name = top
    for part in rest:
        if spec is None or spec.submodule_search_locations is None:
            break
        name += "." + part
        spec = importlib.machinery.PathFinder.find_spec(name, spec.submodule_search_locations)
    if name != module or spec is None or spec.origin is None or not Path(spec.origin).is_file():
        raise ValueError(f"mutation module {module!r} is not found on the path: name an "
                         "importable module of source (e.g. 'fastattn.models.cubic_mlp')")
    file = Path(spec.origin)
    # the path entry: above the top-level package's folder, or beside a top-level module file
    depth = module.count(".") + (file.name == "__init__.py")
    return file.parents[depth], file


def package_copy(dest: Path, modules: Iterable[str] = ()) -> Path:
    """Copy the imported `fastattn` package (and `triton_kernels/` where a source checkout keeps
    it beside the package) and the top-level package (or module) of each of `modules` into
    `dest`; return `dest`, the folder to put first on the path, where each copy shadows its
    installed original. The copy joins the installed compiled core as the checkout does
    (`fastattn/_core_loader.py`)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    entry, _ = source("fastattn")                      # the imported package
    kernels = entry / "triton_kernels"
    if not (entry / "fastattn" / "triton_kernels").is_dir() and (kernels / "__init__.py").is_file():
        shutil.copytree(kernels, dest / "triton_kernels", ignore=ignore)
    for module in ("fastattn", *modules):
        entry, file = source(module)
        top = file.relative_to(entry).parts[0]
        if (dest / top).exists():
            continue
        if (entry / top).is_dir():
            shutil.copytree(entry / top, dest / top, ignore=ignore)
        else:                                          # a top-level module, one file
            shutil.copy2(entry / top, dest / top)
    return dest


def plant(mutation: Mutation, root: Path) -> None:
    """Apply `mutation` to the copy of its module under `root` (`package_copy(root,
    [mutation.module])`; its text must occur exactly once)."""
    entry, file = source(mutation.module)
    path = root / file.relative_to(entry)
    text = path.read_text()
    if text.count(mutation.old) != 1:
        raise ValueError(f"mutation {mutation.key}: {mutation.module} holds its old text "
                         f"{text.count(mutation.old)} times, not once (the code changed: update "
                         f"the mutations of {mutation.paper}'s manifest)")
    path.write_text(text.replace(mutation.old, mutation.new))


_RUNNER = """
import json, sys
from pathlib import Path
from fastattn.experiments import reproduce
from fastattn.experiments.report import write_report
out = Path(sys.argv[1])
failed = {}
for name in sys.argv[2:]:
    try:
        reproduce(name, out, quick=True, resume=False, share=False)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
rows, _ = write_report(out)
(out / "failed.json").write_text(json.dumps(failed))
"""


def run_figures(root: Path, figures: Iterable[str], out: Path, timeout: float = 1200.0
                ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Run the quick `figures` with the package under `root` in a fresh process into `out`;
    return its ledger rows and the figures that failed (name → error)."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(out), *figures], env=env,
                          cwd=root, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"figures {list(figures)} did not run (exit {proc.returncode}): "
                           f"{proc.stderr.strip().splitlines()[-1:] or proc.stdout[-300:]}")
    rows = json.loads((out / "claims.json").read_text())
    return rows, json.loads((out / "failed.json").read_text())


def flipped(before: list[dict[str, Any]], after: list[dict[str, Any]],
            figures: Iterable[str]) -> list[dict[str, Any]]:
    """Claims of `figures` whose status differs between two ledgers: {key, paper, before, after,
    measured_before, measured_after}."""
    figures = set(figures)
    old = {(r["paper"], r["key"]): r for r in before}
    out = []
    for r in after:
        b = old.get((r["paper"], r["key"]))
        if r.get("figure") in figures and b is not None and b["status"] != r["status"]:
            out.append({"paper": r["paper"], "key": r["key"], "before": b["status"],
                        "after": r["status"], "measured_before": b["measured"],
                        "measured_after": r["measured"]})
    return out


def check(mutations: Iterable[Mutation], work: Path, report=None,
          baseline: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Run each mutation (and, once, the unplanted baseline of the figures they need) under
    `work`; return one result per mutation: {key, paper, description, figures, failed, flipped,
    wall_time}. `report(line)` is called as each finishes. `baseline`: the ledger rows of the
    unplanted quick figures where the caller has them (the test suite reproduces every quick
    figure once, tests/helpers.py `quick_figure`); None: run them in an unplanted copy."""
    mutations = list(mutations)
    needed = sorted({f for m in mutations for f in m.figures})
    with tempfile.TemporaryDirectory(prefix="fastattn-mutations-") as tmp:
        if baseline is None:
            clean = package_copy(Path(tmp) / "baseline", [m.module for m in mutations])
            baseline, base_failed = run_figures(clean, needed, work / "baseline")
            if base_failed:
                raise RuntimeError(f"the unplanted figures failed: {base_failed}")
        results = []
        for m in mutations:
            start = time.perf_counter()
            root = package_copy(Path(tmp) / m.key, [m.module])
            plant(m, root)
            rows, failed = run_figures(root, m.figures, work / m.key)
            result = {"key": m.key, "paper": m.paper, "kind": m.kind, "description": m.description,
                      "module": m.module, "figures": list(m.figures), "failed": failed,
                      "flipped": flipped(baseline, rows, m.figures),
                      "wall_time": time.perf_counter() - start}
            results.append(result)
            shutil.rmtree(root)
            if report is not None:
                report(format_result(result))
    return results


def format_result(result: dict[str, Any]) -> str:
    """One line: the planted bug → the claims it flipped."""
    flips = ", ".join(f"{f['paper']}/{f['key']} ({f['before']} → {f['after']})"
                      for f in result["flipped"]) or "NOTHING (a hole in the ledger)"
    failed = f"; figures failed: {sorted(result['failed'])}" if result["failed"] else ""
    return f"{result['key']}: {result['description']} ({result['kind']}) → {flips}{failed}"
