"""The vocabulary of figure recipes: a run's spec, a finished run, a recipe, a figure's index entry."""

from __future__ import annotations

import importlib
import inspect
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from fastattn.configs import model_card
from fastattn.configs.common import TRAIN
from fastattn.models import BaseModelConfig
from fastattn.tasks.base import Task
from fastattn.training import TrainConfig, Trajectory

if TYPE_CHECKING:
    from fastattn.population.objectives import Objective

#: the `TrainConfig` fields that are no run option (`fastattn.configs.common.TRAIN`): the events
#: a flow locates and the recording cadence, which a recipe sets beside its preset's values
TRAINER_ONLY = frozenset(f.name for f in fields(TrainConfig)) - {f.name for f in TRAIN}

#: the trainers a `RunSpec` goes to (`RunSpec.kind`), all behind `fastattn.training.train_many`
KINDS = ("flow", "batched", "sampled", "tokens")


@dataclass(frozen=True)
class RunSpec:
    """One training run of a figure: `task` is any task of the `Task` protocol (linear regression,
    autoregressive, induction, token tasks); `label` is unique within the figure (its run record
    is `DIR/NAME/<label>`); `group` is free-form (a panel, a seed, a rank) for the recipe's own
    use. `init`, if given, is a flat parameter vector `[P]` loaded after the model is built (a
    hand-made initialisation, e.g. the balanced, aligned one a derivation assumes); otherwise the
    model config's seeded init is used.

    `objective`, for an exact run (method "flow" or "gd") only: the `population.Objective` to
    integrate instead of the pair's registered exact one, over the model's flat layout `[P]`
    (e.g. He 2025's approximate loss L̃ of the reduced (ω, μ) model, which is no pair's exact
    population loss). The run record's config carries it (`objective_config`), so a cached
    record is reused only for the same objective.

    `preset`: for a run built by `preset_run`, the (task kind, model kind) of the pair whose
    preset it starts from and the overrides given to it (`{"task": {...}, "model": {...},
    "train": {...}}`): what the recipe says, apart from the paper's setting.

    The trainer follows from the spec (`kind`); no recipe calls a trainer itself.
    """

    label: str
    task: Task
    model: BaseModelConfig
    train: TrainConfig
    group: dict[str, Any] = field(default_factory=dict)
    init: tuple[float, ...] | None = None
    objective: Objective | None = None
    preset: tuple[str, str, dict[str, dict[str, Any]]] | None = None

    def __post_init__(self) -> None:
        if self.objective is not None and self.train.method not in ("flow", "gd"):
            raise ValueError(f"run {self.label!r}: objective is integrated by an exact run; "
                             f"method={self.train.method!r} trains the task's sampled loss "
                             "(use method='flow' or 'gd', or drop objective)")

    @property
    def kind(self) -> str:
        """Which trainer runs it (one of `KINDS`; `trainer_kind`)."""
        return trainer_kind(self)


def preset_run(label: str, task: str, model: str, /, *, group: dict[str, Any] | None = None,
               init: tuple[float, ...] | None = None, objective: Objective | None = None,
               **given: dict[str, Any]) -> RunSpec:
    """The run `label` of the (task, model) pair's paper preset, overridden by `given` (task=,
    model=, train= dicts by field), resolved as `train` and `sweep` resolve a command line
    (`fastattn.configs.resolve`): a paper's setting is written once, in its preset, and a recipe
    states only what differs from it (tests/experiments/test_recipe.py checks that no override
    restates the preset). `train` may also set the `TRAINER_ONLY` fields, which no preset or
    command line has. `group`, `init`, `objective`: as `RunSpec`'s."""
    from fastattn.configs import resolve
    from fastattn.training.build import build_task, model_config

    given = {k: dict(v) for k, v in given.items() if v}
    options = {k: v if k != "train" else {n: x for n, x in v.items() if n not in TRAINER_ONLY}
               for k, v in given.items()}
    r = resolve(task, model, options)
    built = build_task(r.task)
    trainer = {n: x for n, x in given.get("train", {}).items() if n in TRAINER_ONLY}
    return RunSpec(label, built, model_config(r.model, built), TrainConfig(**r.train, **trainer),
                   group or {}, init, objective, (task, model, given))


def trainer_kind(spec: RunSpec, model: Any = None) -> str:
    """The trainer of `spec` (one of `KINDS`): "flow" (exact population flow or GD of the pair's
    objective, or of `spec.objective`), "tokens" (a token transformer: its card's `inputs`),
    "batched" (Adam that the fused He step trains: `train_many` trains all such runs of a figure
    that share their options together) or "sampled" (SGD/Adam/task-SGD by torch).
    `model`: the spec's built model, if at hand (else one is built to ask the fused step)."""
    if spec.train.method in ("flow", "gd"):
        return "flow"
    if model_card(spec.model.kind).inputs == "tokens":
        return "tokens"
    if spec.train.method != "adam" or spec.train.sampler not in ("auto", "fast"):
        return "sampled"
    from fastattn.models import build_model
    from fastattn.training.engines import FUSED, NoEngineError, dispatch

    model = model if model is not None else build_model(spec.model)
    try:
        return "batched" if dispatch(model, spec.task, spec.train).engine is FUSED else "sampled"
    except NoEngineError:       # `train` says why, when the run is trained
        return "sampled"


def objective_config(objective: Objective) -> dict[str, Any]:
    """The plain-data identity of an `objective` override: its class and public attributes (a
    Python `Objective` subclass keeps its parameters there). An objective without attributes
    (a compiled one) gets a fresh token instead: its runs are never taken for one another, and a
    cached record of it is never reused."""
    from fastattn.training.records import to_jsonable

    try:
        fields = {k: v for k, v in vars(objective).items() if not k.startswith("_")}
    except TypeError:
        return {"kind": type(objective).__qualname__, "unknown_identity": uuid.uuid4().hex}
    return {"kind": type(objective).__qualname__, **to_jsonable(fields)}


@dataclass
class Run:
    """A finished run: its spec, trajectory and the trained model (for weight diagnostics)."""

    spec: RunSpec
    traj: Trajectory
    model: Any


@dataclass(frozen=True)
class Recipe:
    """What a figure computes: `runs(quick, **options)` lists its runs; `summarize` compares them
    with theory (a JSON-able dict); `plot(runs, summary)` returns a matplotlib Figure.

    A `summarize` that declares a keyword `quick` is given the --quick flag (`summarize(runs,
    quick=...)`): a recipe that computes without runs (closed forms, Monte Carlo of fixed
    predictors; no training or flow) sizes itself there.
    """

    caption: str
    runs: Callable[..., list[RunSpec]]
    summarize: Callable[[list[Run]], dict[str, Any]]
    plot: Callable[[list[Run], dict[str, Any]], Any]


@dataclass(frozen=True)
class Figure:
    """A figure's entry in its paper's index (`fastattn/experiments/<paper>/__init__.py`), known
    without importing the module that holds its recipe.

    Attributes:
        name: the `fastattn reproduce` name, e.g. "zhang2025-fig3".
        title: one line for `fastattn reproduce --list` and the plot's title.
        recipe: "module:attribute" of its `Recipe`; the module is imported by `load()`.
        options: option name → allowed values; each is a keyword argument of the recipe's `runs`.
        theory: the words of the legend entry that labels the theory the paper overlays on this
            figure (e.g. "Eq. 19"), which the figure must plot; None where the paper's figure draws
            no theory curve (weights, landscapes, sampled-only runs). Keyword-only and required:
            each figure says which it is.
    """

    name: str
    title: str
    recipe: str
    options: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    theory: str | None = field(kw_only=True)

    def load(self) -> Recipe:
        """Import the recipe's module and return its `Recipe`."""
        module, _, attr = self.recipe.partition(":")
        recipe = getattr(importlib.import_module(module), attr)
        params = inspect.signature(recipe.runs).parameters
        missing = [k for k in self.options if k not in params]
        if missing:
            raise TypeError(f"{self.name}: options {missing} are not arguments of {self.recipe}.runs")
        return recipe


def summarize(recipe: Recipe, runs: list[Run], quick: bool) -> dict[str, Any]:
    """`recipe.summarize(runs)`, passing `quick` to a `summarize` that declares it."""
    if "quick" in inspect.signature(recipe.summarize).parameters:
        return recipe.summarize(runs, quick=quick)
    return recipe.summarize(runs)


def quick_note(recipe: Recipe, **options: Any) -> str:
    """What `--quick` shrinks in `recipe`, in words, for its title and caption: the runs it drops
    and each setting that differs between the quick and the full run of the same label, e.g.
    "QUICK (smaller settings; the claims measured only at full settings are not run): 2 of 6 runs;
    steps 300 → 40; t_end 3e+05 → 1e+05". Compares the recipes' own run lists, so no recipe states
    it by hand."""
    from dataclasses import is_dataclass

    quick, full = recipe.runs(True, **options), recipe.runs(False, **options)
    parts = []
    if len(quick) != len(full):
        parts.append(f"{len(quick)} of {len(full)} runs")
    by_label = {s.label: s for s in full}
    changed: dict[str, set[tuple[str, str]]] = {}
    for q in quick:
        f = by_label.get(q.label)
        if f is None:
            continue
        for part in ("train", "model", "task"):
            a, b = getattr(f, part), getattr(q, part)
            if not (is_dataclass(a) and is_dataclass(b)) or type(a) is not type(b):
                continue
            for fld in fields(a):
                va, vb = getattr(a, fld.name), getattr(b, fld.name)
                if _differs(va, vb):
                    changed.setdefault(fld.name, set()).add((_short(va), _short(vb)))
    for name, pairs in sorted(changed.items()):
        parts.append(f"{name} " + ", ".join(f"{a} → {b}" for a, b in sorted(pairs)))
    if not quick and "quick" in inspect.signature(recipe.summarize).parameters:
        parts.append("fewer samples in its Monte Carlo (sized by the recipe's summarize)")
    if not parts:       # a figure cheap enough at its full settings says so rather than nothing
        return "QUICK (nothing shrunk: the quick runs are the full runs)"
    return "QUICK (smaller settings; claims measured only at full settings are not run): " + "; ".join(parts)


def _differs(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except (TypeError, ValueError):       # arrays: compare their contents
        import numpy as np

        return not np.array_equal(np.asarray(a), np.asarray(b))


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    text = str(value)
    return text if len(text) <= 24 else text[:21] + "…"
