"""Resolved option values → (task, model, TrainConfig): the one place that constructs a run from
the cards. It sits in the trainer layer, below the torch-free cards it reads (`fastattn.configs`,
a pure leaf); it imports the task, model and trainer modules only when called."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from fastattn.configs.base import model_card, task_card
from fastattn.configs.options import resolve


def build_task(task_values: Mapping[str, Any]):
    """The task of a {"kind", **option values} dict (kind default linear_regression); fields the
    task family does not have are ignored (a sweep's table carries every family's)."""
    from fastattn.tasks import get_task

    values = dict(task_values)
    kind = values.pop("kind", "linear_regression")
    card = task_card(kind)
    mine = {f.name: f.default for f in card.fields} | {k: v for k, v in values.items()
                                                       if k in {f.name for f in card.fields}}
    return get_task(kind)(**card.converter()(mine))


def model_config(model_values: Mapping[str, Any], task: Any):
    """The model config of a {"kind", **option values} dict for `task` (its dim, and the fields the
    card takes from the task); fields the family does not have are ignored."""
    from fastattn.models import get_model

    values = dict(model_values)
    kind = values.pop("kind")
    card = model_card(kind)
    config = get_model(kind).config
    names = {f.name for f in dataclasses.fields(config)}
    fields = {k: v for k, v in values.items() if k in {f.name for f in card.fields} and v is not None}
    fields |= {k: getattr(task, src) for k, src in card.from_task.items()} | dict(card.fixed)
    if "dim" in names:
        fields["dim"] = task.dim
    if "heads" in names:
        fields.setdefault("heads", 1)
    return config(**{k: v for k, v in fields.items() if k in names})


def build_run(spec: Mapping[str, Mapping[str, Any]]):
    """(task, model, TrainConfig) of a {"task", "model", "train"} dict of option values by field
    (`Resolved.spec()`, or a sweep's grid point). The pair must pair (one line naming the models
    that pair with the task); values of other families' fields are ignored, and the fields not
    given take the pair's preset."""
    from fastattn.configs.common import TRAIN
    from fastattn.configs.options import check_pair
    from fastattn.models import build_model
    from fastattn.training import TrainConfig

    task_kind = spec["task"].get("kind", "linear_regression")
    model_kind = spec["model"]["kind"]
    check_pair(task_kind, model_kind)
    known = {"task": {f.name for f in task_card(task_kind).fields},
             "model": {f.name for f in model_card(model_kind).fields},
             "train": {f.name for f in TRAIN}}
    given = {t: {k: v for k, v in spec.get(t, {}).items() if k in known[t] and v is not None}
             for t in known}
    r = resolve(task_kind, model_kind, given)
    task = build_task(r.task)
    extra = {k: v for k, v in spec.get("train", {}).items() if k not in known["train"]}
    return task, build_model(model_config(r.model, task)), TrainConfig(**(r.train | extra))


def build_default(task: str, model: str, /, **given: Mapping[str, Any]):
    """(task, model, TrainConfig) of the pair's paper preset, overridden by `given` (task=,
    model=, train= dicts by field; the kinds are positional-only, so that `task=` and `model=`
    name the option dicts)."""
    return build_run(resolve(task, model, given).spec())
