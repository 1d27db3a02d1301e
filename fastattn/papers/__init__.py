"""The papers the library serves, each declared by one manifest (`Paper`), and the one registry of
them. No other module names a paper: the cards, task and model families, objectives, figures,
claims and sweep hooks are found by iterating the manifests.

Manifests come from three places, in this order: the built-in list `BUILTIN`, the entry-point
group `fastattn.papers` of installed distributions (each entry point's object is a `Paper`; found
once per process, sorted by entry-point name), and `register(paper)` at run time (a test, a
notebook). A manifest holds import paths only, so reading one imports nothing of its paper; each
kind of entry is imported when the layer that owns it first needs it (`load("models")` by the
model registry, `objects("figures")` by the figure index, ...). Pure Python, no torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from importlib import metadata
from typing import Any

#: the entry-point group an installed paper declares its manifest under
GROUP = "fastattn.papers"

#: the papers that ship with fastattn, in the order the CLI and the report list them
BUILTIN = ("fastattn.papers.zhang2025:PAPER", "fastattn.papers.he2025:PAPER",
           "fastattn.papers.sander2024:PAPER", "fastattn.papers.mainali2025:PAPER",
           "fastattn.papers.musat2025:PAPER")

#: fields holding modules that register entries when imported (a tuple of "module")
MODULE_FIELDS = ("cards", "tasks", "models", "objectives", "theory")
#: fields holding one object each ("module:attr")
OBJECT_FIELDS = ("figures", "hooks", "claims", "mutations")


@dataclass(frozen=True)
class Paper:
    """One paper's manifest: where each of its parts lives, as import paths.

    Attributes:
        name: the paper's id, e.g. "zhang2025": its figures are named "<name>-..." and its cards'
            `paper` and its claims' `paper` say it (letters, digits and underscores only).
        title: the citation in a few words, e.g. "Zhang et al. 2025, linear attention".
        cards: modules registering its task and model cards (`fastattn.configs`; torch-free).
        tasks: modules registering its task families (`fastattn.tasks.register_task`).
        models: modules registering its model families (`fastattn.models.register_model`).
        objectives: modules registering its exact objectives
            (`fastattn.population.register_objective`).
        theory: its closed forms (imported by no registry; listed so that a test imports them).
        figures: "module:attr" of its tuple of `fastattn.experiments.Figure`, or None.
        hooks: "module:attr" of its sweep `fastattn.sweep.hooks.Hooks`, or None.
        claims: "module:attr" of its tuple of `fastattn.experiments.claims.Claim`, or None.
        mutations: "module:attr" of its tuple of planted bugs its claims must catch
            (`fastattn.experiments.mutations.Mutation`), or None.
    """

    name: str
    title: str
    cards: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    objectives: tuple[str, ...] = ()
    theory: tuple[str, ...] = ()
    figures: str | None = None
    hooks: str | None = None
    claims: str | None = None
    mutations: str | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"paper name {self.name!r}: use letters, digits and underscores "
                             "(figures are named '<paper>-<figure>')")
        for name in MODULE_FIELDS:
            value = getattr(self, name)
            if isinstance(value, str) or any(not isinstance(v, str) or ":" in v for v in value):
                raise ValueError(f"paper {self.name}: {name} must be a tuple of module paths; "
                                 f"got {value!r}")
        for name in OBJECT_FIELDS:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or value.count(":") != 1):
                raise ValueError(f"paper {self.name}: {name} must be 'module:attr' or None; "
                                 f"got {value!r}")

    def paths(self) -> dict[str, tuple[str, ...]]:
        """Field → its import paths (every field, empty where none)."""
        return {f.name: ((v,) if isinstance(v, str) else tuple(v or ()))
                for f in fields(self) if f.name not in ("name", "title")
                for v in [getattr(self, f.name)]}


def resolve(path: str) -> Any:
    """The module of "module", or the attribute of "module:attr"."""
    module, _, attr = path.partition(":")
    target = importlib.import_module(module)
    return getattr(target, attr) if attr else target


class _Registry:
    """The manifests (discovered once, then those registered at run time) and which of their
    modules have been imported. `generation` counts changes, so derived tables know when to
    rebuild."""

    def __init__(self) -> None:
        self.discovered: dict[str, Paper] | None = None
        self.added: dict[str, Paper] = {}
        self.loaded: set[tuple[str, str]] = set()
        self.generation = 0

    def papers(self) -> dict[str, Paper]:
        if self.discovered is None:
            found = [resolve(p) for p in BUILTIN]
            found += [ep.load() for ep in sorted(metadata.entry_points(group=GROUP),
                                                 key=lambda ep: ep.name)]
            out: dict[str, Paper] = {}
            for paper in found:
                _check_new(paper, out)
                out[paper.name] = paper
            self.discovered = out
        return self.discovered | self.added


def _check_new(paper: Any, known: Mapping[str, Paper]) -> None:
    if not isinstance(paper, Paper):
        raise TypeError(f"a paper manifest must be a fastattn.papers.Paper; got "
                        f"{type(paper).__name__}")
    if paper.name in known and known[paper.name] != paper:
        raise ValueError(f"paper {paper.name!r} has two manifests; give the new one another name")


REGISTRY = _Registry()


def register(paper: Paper) -> Paper:
    """Add `paper` to the registry (after the built-in and installed ones); registering the same
    manifest again does nothing. Its modules are imported when first needed."""
    _check_new(paper, REGISTRY.papers())
    if paper.name not in REGISTRY.papers():
        REGISTRY.added[paper.name] = paper
        REGISTRY.generation += 1
    return paper


def unregister(name: str) -> None:
    """Remove a paper `register` added (the entries its modules registered stay where they are:
    a test that added a paper restores the registries it changed)."""
    if name not in REGISTRY.added:
        raise ValueError(f"paper {name!r} was not added by register(); added: "
                         f"{', '.join(REGISTRY.added) or 'none'}")
    del REGISTRY.added[name]
    REGISTRY.loaded = {(p, f) for p, f in REGISTRY.loaded if p != name}
    REGISTRY.generation += 1


def manifests() -> tuple[Paper, ...]:
    """Every paper's manifest: the built-in ones, the installed ones, then those registered."""
    return tuple(REGISTRY.papers().values())


def names() -> tuple[str, ...]:
    """Every paper's name, in the order of `manifests()`."""
    return tuple(REGISTRY.papers())


def get(name: str) -> Paper:
    papers = REGISTRY.papers()
    if name not in papers:
        raise ValueError(f"{name!r} is not a paper; choose from {', '.join(papers)}")
    return papers[name]


def generation() -> int:
    """A number that changes whenever a paper is registered or unregistered."""
    return REGISTRY.generation


def load(field: str) -> None:
    """Import the modules every paper lists under `field` (one of `MODULE_FIELDS`) that are not
    imported yet, so that their entries are registered. Cheap once done."""
    if field not in MODULE_FIELDS:
        raise ValueError(f"load takes one of {MODULE_FIELDS}; got {field!r}")
    for paper in REGISTRY.papers().values():
        if (paper.name, field) in REGISTRY.loaded:
            continue
        # marked first: a module that reads its own registry while it registers must not
        # re-enter this paper's import
        REGISTRY.loaded.add((paper.name, field))
        try:
            for path in getattr(paper, field):
                importlib.import_module(path)
        except BaseException:
            REGISTRY.loaded.discard((paper.name, field))
            raise


def objects(field: str) -> list[tuple[Paper, Any]]:
    """(paper, object) of every paper that has `field` (one of `OBJECT_FIELDS`), in paper order;
    each object is imported on this call."""
    if field not in OBJECT_FIELDS:
        raise ValueError(f"objects takes one of {OBJECT_FIELDS}; got {field!r}")
    return [(p, resolve(getattr(p, field))) for p in REGISTRY.papers().values()
            if getattr(p, field) is not None]


def collect(field: str, key: Callable[[Any], str],
            check: Callable[[Paper, Any], None]) -> dict[str, Any]:
    """Every paper's entries under `field` (one of `OBJECT_FIELDS`, each a tuple of entries) by
    `key(entry)`, in paper order: the one walk behind the figure index and the planted bugs.
    `check(paper, entry)` raises for an entry its paper may not list; ValueError for a key
    listed twice."""
    out: dict[str, Any] = {}
    for paper, entries in objects(field):
        for entry in entries:
            check(paper, entry)
            name = key(entry)
            if name in out:
                raise ValueError(f"{field}: {name!r} is listed twice; rename one")
            out[name] = entry
    return out


class Registry(dict):
    """A registry of entries keyed by kind (e.g. `fastattn.models.MODELS`) that, before it is
    read, imports the modules the papers list under `field`: a paper registered at run time is
    found without anyone importing its modules. Writes (a family registering itself) go through
    `add`, which imports nothing."""

    def __init__(self, field: str) -> None:
        super().__init__()
        self.field = field

    def add(self, key: str, value: Any) -> None:
        dict.__setitem__(self, key, value)

    def has(self, key: str) -> bool:
        """Whether `key` is registered now (no import: for a family checking itself)."""
        return dict.__contains__(self, key)

    def peek(self, key: str) -> Any:
        return dict.__getitem__(self, key)

    def _load(self) -> None:
        load(self.field)

    def __getitem__(self, key: str) -> Any:
        self._load()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._load()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self._load()
        return super().__iter__()

    def __len__(self) -> int:
        self._load()
        return super().__len__()

    def get(self, key: str, default: Any = None) -> Any:
        self._load()
        return super().get(key, default)

    def keys(self):
        self._load()
        return super().keys()

    def values(self):
        self._load()
        return super().values()

    def items(self):
        self._load()
        return super().items()

    def __repr__(self) -> str:
        self._load()
        return super().__repr__()


class View(Mapping):
    """A read-only table derived from the manifests (e.g. the figure index), rebuilt by `build()`
    when a paper has been registered or unregistered since it was last built (or the registry
    replaced: a test's own)."""

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self._build = build
        self._table: dict[str, Any] | None = None
        self._source: tuple[_Registry, int] | None = None

    def _current(self) -> dict[str, Any]:
        source = self._source
        if self._table is None or source[0] is not REGISTRY or source[1] != REGISTRY.generation:
            self._source = (REGISTRY, REGISTRY.generation)
            self._table = self._build()
        return self._table

    def __getitem__(self, key: str) -> Any:
        return self._current()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    def __repr__(self) -> str:
        return f"View({self._current()!r})"


__all__ = ["BUILTIN", "GROUP", "MODULE_FIELDS", "OBJECT_FIELDS", "REGISTRY", "Paper", "Registry",
           "View", "collect", "generation", "get", "load", "manifests", "names", "objects", "register",
           "resolve", "unregister"]
