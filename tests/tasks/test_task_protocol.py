"""The Task protocol and the task registry: what trainers, the CLI and the sweeps rely on."""

import dataclasses

import numpy as np
import pytest
import torch

from fastattn.models import MergedKQ, SeparateKQ
from fastattn.tasks import TASKS, LinearRegression, WishartTasks, build_task, get_task, register_task
from fastattn.training.records import to_jsonable

TASK = LinearRegression(3, context=[4, 7], spectrum=[0.5, 0.3, 0.2], rotate=True, noise=0.1)


def test_the_registry_holds_linear_regression_under_its_kind():
    assert TASKS["linear_regression"] is LinearRegression
    assert TASKS["wishart_tasks"] is WishartTasks
    assert get_task("linear_regression") is LinearRegression
    assert LinearRegression.kind == TASK.kind == "linear_regression"
    assert TASK.losses[0] == "query"


def test_registry_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"task='regression' is unknown.*linear_regression"):
        get_task("regression")
    with pytest.raises(ValueError, match="needs its 'kind'"):
        build_task({"dim": 3})

    class Incomplete:
        kind = "incomplete"

    with pytest.raises(TypeError, match=r"Incomplete lacks \['losses'"):
        register_task(Incomplete)
    clash = type("Clash", (LinearRegression,), {})
    with pytest.raises(ValueError, match="already registered by LinearRegression"):
        register_task(clash)


def test_a_record_rebuilds_the_task():
    record = {"kind": TASK.kind, **to_jsonable(TASK)}
    again = build_task(record)
    assert type(again) is LinearRegression
    a, b = TASK.sample(16, 3), again.sample(16, 3)
    for name in ("tokens", "lengths"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name), rtol=0, atol=0)
    np.testing.assert_array_equal(TASK.moments().cov, again.moments().cov)


def test_loss_equals_the_inline_losses_it_replaces():
    """task.loss is the trainer's former inline code: the query loss and Eq. 23's next-token loss."""
    batch = TASK.sample(64, 5)
    for model in (MergedKQ(3, 2, init_scale=0.7, init_seed=1), SeparateKQ(3, 2, 2, init_scale=0.7)):
        query = ((batch.y_q - model(batch.x, batch.y, batch.x_q, lengths=batch.lengths)) ** 2).mean()
        assert TASK.loss(model, batch) == query
        x = torch.cat([batch.x, batch.x_q[:, None]], 1)
        y = torch.cat([batch.y, batch.y_q[:, None]], 1)
        next_token = ((y[:, 1:] - model.predict_next_token(x, y)) ** 2).mean()
        assert TASK.loss(model, batch, "next_token") == next_token
    with pytest.raises(ValueError, match=r"loss='last' is unknown.*'query', 'next_token'"):
        TASK.loss(model, batch, "last")


def test_stats_batches_give_the_query_loss_of_the_same_prediction():
    task = LinearRegression(3, context=9, data_seed=2)
    model = SeparateKQ(3, 2, init_scale=0.7)
    stats = task.sample_stats(32, 1)
    b, x_q, y_q = stats                                  # still unpacks as the old tuple
    want = ((y_q - torch.einsum("bd,de,be->b", b, model.gamma(), x_q)) ** 2).mean()
    torch.testing.assert_close(task.loss(model, stats), want, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="query loss only"):
        task.loss(model, stats, "next_token")


def test_test_sets_are_named_and_in_weight_only_with_a_fixed_task():
    assert set(TASK.test_sets(8, seed=9)) == {"in_context"}
    iwl = dataclasses.replace(TASK, fixed_task_fraction=0.5)
    sets = iwl.test_sets(8, seed=9)
    assert set(sets) == {"in_context", "in_weight"}
    torch.testing.assert_close(sets["in_context"].tokens, iwl.in_context_test_set(8, 9).tokens)
    assert TASK.sequence_size == (7 + 1) * (3 + 1)
