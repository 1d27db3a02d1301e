"""Each family's declaration (its card): options with help and defaults, flat parameter shapes, the
tasks it pairs with and each pair's paper preset. Pure Python: importing it loads no torch.

One module per paper registers its task and model cards; a new family registers its own
(`register_model_card`, `register_task_card`) beside its model and objective. The CLI's `train`
and `sweep` options come from here (`options_for`, `all_options`); `fastattn.configs.build` turns
resolved values into (task, model, TrainConfig). docs/configs.md describes the design.
"""

from fastattn.configs import he2025, mainali2025, musat2025, sander2024, zhang2025  # noqa: F401
from fastattn.configs.base import (
    MODEL_CARDS,
    TASK_CARDS,
    Field,
    ModelCard,
    PaperTime,
    PerDim,
    Preset,
    TaskCard,
    model_card,
    n_params,
    param_shapes,
    register_model_card,
    register_task_card,
    task_card,
    unflatten,
)
from fastattn.configs.options import (
    Option,
    Resolved,
    all_options,
    check_pair,
    options_for,
    pairs,
    preset_for,
    resolve,
)

__all__ = ["MODEL_CARDS", "TASK_CARDS", "Field", "ModelCard", "Option", "PaperTime", "PerDim", "Preset",
           "Resolved", "TaskCard", "all_options", "check_pair", "model_card", "n_params",
           "options_for", "pairs", "param_shapes", "preset_for", "register_model_card",
           "register_task_card", "resolve", "task_card", "unflatten"]
