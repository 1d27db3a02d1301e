"""Declarative figure recipes, registered by name; `reproduce(name, out)` runs one."""

from fastattn.experiments import zhang2025  # noqa: F401  (registers the recipes)
from fastattn.experiments.registry import FIGURES, Recipe, Run, RunSpec, get, reproduce

__all__ = ["FIGURES", "Recipe", "Run", "RunSpec", "get", "reproduce"]
