"""Fig. 10 (App. B): the "full" transformer, softmax attention and a ReLU MLP per layer
(`ARTransformer`, spec §3.7), against L steps of inner-loss GD: Fig. 5's data, training and
baseline (`fig5`), L = 1..6. The paper gives no code for this model; its MLP width here is E = 3d =
15, the `forward_expansion = 1` MLP that the authors' augmented.py builds (and never calls)."""

from __future__ import annotations

from functools import partial
from typing import Any

from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.sander2024 import fig5
from fastattn.models import ARTransformerConfig

MLP_WIDTH = 3 * fig5.D


def transformer(layers: int) -> ARTransformerConfig:
    return ARTransformerConfig(fig5.D, MLP_WIDTH, layers=layers, softmax=True, init_seed=0,
                               dtype="float32")


def runs(quick: bool, size: str = "cpu") -> list[RunSpec]:
    return fig5.specs(quick, transformer, size)


def summarize(runs: list[Run]) -> dict[str, Any]:
    return {**fig5.summarize(runs), "mlp_width": MLP_WIDTH}


RECIPE = Recipe("Softmax + MLP per layer (App. B) vs L steps of inner-loss GD.", runs, summarize,
                partial(fig5.plot, name="softmax + MLP transformer"))
