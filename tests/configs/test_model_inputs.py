"""A model card's `inputs` (what the family reads) agrees with what its tasks draw: a card that
says "tokens" pairs only with tasks whose batches start with integer token ids, and the figure
recipes list its runs as trainer kind "tokens" from the card, without probing the config."""

from __future__ import annotations

import dataclasses

import pytest

from fastattn.configs import resolve
from fastattn.configs.base import MODEL_CARDS, ModelCard
from fastattn.experiments.recipe import RunSpec, trainer_kind
from fastattn.training import TrainConfig
from fastattn.training.build import build_task, model_config

PAIRS = [(kind, task) for kind, card in MODEL_CARDS.items() for task in card.tasks]


def _holds_ids(batch) -> bool:
    """Whether the batch's first tensor (a NamedTuple's or a dataclass's first field) is integer."""
    if isinstance(batch, tuple):
        first = batch[0]
    else:
        first = getattr(batch, dataclasses.fields(batch)[0].name)
    return not (first.dtype.is_floating_point or first.dtype.is_complex)


@pytest.mark.parametrize(("kind", "task"), PAIRS, ids=[f"{k}-{t}" for k, t in PAIRS])
def test_inputs_match_the_tasks_batches(kind, task):
    r = resolve(task, kind, {})
    built = build_task(r.task)
    ids = _holds_ids(built.sample(2, 0))
    assert (MODEL_CARDS[kind].inputs == "tokens") == ids
    if r.train["method"] not in ("flow", "gd"):
        spec = RunSpec("x", built, model_config(r.model, built), TrainConfig(**r.train))
        assert (trainer_kind(spec) == "tokens") == ids


def test_an_unknown_inputs_value_is_refused():
    with pytest.raises(ValueError, match="inputs='ids'; use one of"):
        ModelCard("k", "p", "s", (), None, {}, inputs="ids")
