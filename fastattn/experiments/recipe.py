"""The vocabulary of figure recipes: a run's spec, a finished run, a recipe, a figure's index entry."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastattn.models import BaseModelConfig
from fastattn.tasks.base import Task
from fastattn.training import TrainConfig, Trajectory


@dataclass(frozen=True)
class RunSpec:
    """One training run of a figure: `task` is any task of the `Task` protocol (linear regression,
    autoregressive, induction, token tasks); `label` is unique within the figure; `group` is free-form
    (a panel, a seed, a rank) for the recipe's own use. `init`, if given, is a flat parameter
    vector `[P]` loaded after the model is built (a hand-made initialisation, e.g. the balanced,
    aligned one a derivation assumes); otherwise the model config's seeded init is used."""

    label: str
    task: Task
    model: BaseModelConfig
    train: TrainConfig
    group: dict[str, Any] = field(default_factory=dict)
    init: tuple[float, ...] | None = None


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
    quick=...)`): a recipe that computes without runs (exact flows, Monte Carlo) sizes itself there.
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
    """

    name: str
    title: str
    recipe: str
    options: dict[str, tuple[Any, ...]] = field(default_factory=dict)

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
