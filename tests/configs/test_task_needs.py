"""A model family that reads one kind of token refuses a task of another in one line, before any
work (`ModelCard.task_needs`, checked by `configs.resolve`, the door every run takes): Sander's
augmented families on plain tokens crashed with a raw shape error inside the first step."""

import pytest

from fastattn.configs import model_card, resolve
from fastattn.training.build import build_default


@pytest.mark.parametrize(("model", "task", "message"), [
    ("aug", {"encoding": "plain"}, "--model aug reads --encoding augmented tokens; the task has "
                                   "--encoding plain: give --encoding augmented"),
    ("diag", {"encoding": "augmented"}, "--model diag reads --encoding plain tokens"),
    ("eq6", {"representation": "complex"}, "--model eq6 reads --representation real tokens"),
    ("pe_only", {"duplicate": 2}, "--model pe_only reads --duplicate 1 tokens"),
])
def test_a_family_refuses_tokens_it_does_not_read(model, task, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        resolve("autoregressive", model, {"task": task})


def test_every_autoregressive_preset_gives_its_family_the_tokens_it_reads():
    for model in ("aug", "aug_layers", "aug_transformer", "diag", "eq6", "non_aug", "pe_only"):
        task, _, _ = build_default("autoregressive", model)
        for name, value in model_card(model).task_needs.items():
            assert getattr(task, name) == value, (model, name)
