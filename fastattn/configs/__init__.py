"""Each family's declaration (its card): options with help and defaults, flat parameter shapes, the
tasks it pairs with and each pair's paper preset. Pure Python: importing it loads no torch.

Each paper's manifest (`fastattn.papers`) lists the modules that register its task and model cards
(`register_model_card`, `register_task_card`); they are imported on the first read of `MODEL_CARDS`
or `TASK_CARDS`, so a paper registered later is found too. The CLI's `train`
and `sweep` options come from here (`options_for`, `all_options`); `fastattn.training.build` turns
resolved values into (task, model, TrainConfig). docs/configs.md describes the design.
"""

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
