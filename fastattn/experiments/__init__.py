"""Figure recipes, one package per paper, indexed by name; `reproduce(name, out)` runs one."""

from fastattn.experiments.recipe import Figure, Recipe, Run, RunSpec
from fastattn.experiments.registry import FIGURES, get, reproduce

__all__ = ["FIGURES", "Figure", "Recipe", "Run", "RunSpec", "get", "reproduce"]
