"""Fig. 10 (App. B): the "full" transformer, softmax attention and a ReLU MLP per layer
(`ARTransformer`, spec §3.7), against L steps of inner-loss GD: Fig. 5's data, training and
baseline (`fig5`), L = 1..6. The paper gives no code for this model; its MLP width here is E = 3d =
15, the `forward_expansion = 1` MLP that the authors' augmented.py builds (and never calls)."""

from __future__ import annotations

from functools import partial
from typing import Any

from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.sander2024 import fig5

#: the MLP width (the model's `heads`), E = 3d as the module says; the preset's 32 is Fig. 9's MLP
#: width (spec sander2024: "Fig. 9: d = 1, T = 10, MLP hidden width 32")
MLP_WIDTH = 3 * fig5.D


def runs(quick: bool, size: str = "cpu") -> list[RunSpec]:
    return fig5.specs(quick, "aug_transformer", lambda L: {"layers": L, "heads": MLP_WIDTH}, size)


def summarize(runs: list[Run]) -> dict[str, Any]:
    return {**fig5.summarize(runs), "mlp_width": MLP_WIDTH}


RECIPE = Recipe("Softmax + MLP per layer (App. B) vs L steps of inner-loss GD.", runs, summarize,
                partial(fig5.plot, name="softmax + MLP transformer"))
