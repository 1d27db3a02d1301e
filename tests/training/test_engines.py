"""The engine registry: each engine declares what it trains, `dispatch` picks the first that can
train a run, and a run no engine can train is refused with every engine's reasons."""

import dataclasses

import pytest

from fastattn.models import LinearTransformer, MultiHeadSoftmax, SeparateKQ, SoftmaxMergedKQ
from fastattn.tasks import LinearRegression, WishartTasks
from fastattn.training import TrainConfig, train
from fastattn.training.capabilities import FORWARD_STATS, QUERY_LOSS_GRAD, SNAPSHOT_SERIES
from fastattn.training.engines import (
    ENGINES,
    EXACT,
    FUSED,
    STATS,
    TASK_SGD,
    TORCH,
    Engine,
    NoEngineError,
    dispatch,
    register_engine,
)

TASK = LinearRegression(3, context=7, spectrum=[0.5, 0.3, 0.2], data_seed=0)
ADAM = TrainConfig(method="adam", lr=1e-2, steps=2, batch_size=8, progress=False)


def test_each_method_reaches_its_engine():
    cases = [(SeparateKQ(3, 2), TASK, TrainConfig(method="flow", t_end=1.0), EXACT, "auto"),
             (SeparateKQ(3, 2), TASK, dataclasses.replace(ADAM, sampler="stats"), STATS, "stats"),
             (SeparateKQ(3, 2), TASK, ADAM, TORCH, "tokens"),
             (MultiHeadSoftmax(3, 2), LinearRegression(3, context=7, data_seed=0), ADAM, FUSED,
              "fast"),
             (LinearTransformer(2), WishartTasks(2, context=5, tasks=3),
              TrainConfig(method="task_sgd", lr=1e-2, steps=2), TASK_SGD, "auto")]
    for model, task, cfg, engine, sampler in cases:
        chosen = dispatch(model, task, cfg)
        assert (chosen.engine, chosen.config.sampler) == (engine, sampler), (model.kind, cfg)


def test_a_run_no_engine_can_train_lists_every_engine_and_its_reasons():
    """A softmax model asked for the stats sampler: no engine serves it, and the message names each
    engine in order with what stops it."""
    cfg = dataclasses.replace(ADAM, sampler="stats")
    with pytest.raises(NoEngineError) as info:
        dispatch(SoftmaxMergedKQ(3, 2), TASK, cfg)
    lines = str(info.value).splitlines()
    assert "softmax_merged on linear_regression" in lines[0] and "sampler='stats'" in lines[0]
    by_engine = {line.split()[1]: line for line in lines[1:]}
    assert list(by_engine) == list(ENGINES)
    assert "method='adam' (it trains flow or gd)" in by_engine["exact"]
    assert "method='adam' (it trains task_sgd)" in by_engine["task_sgd"]
    assert "sampler='stats'" in by_engine["fused"] and "model 'softmax_merged'" in by_engine["fused"]
    assert "forward_stats: model softmax_merged does not" in by_engine["stats"]
    assert "sampler='stats' (it takes tokens or auto)" in by_engine["torch"]
    with pytest.raises(ValueError, match="forward_stats: model softmax_merged does not"):
        train(SoftmaxMergedKQ(3, 2), TASK, cfg)


def test_task_sgd_names_both_missing_capabilities():
    with pytest.raises(NoEngineError) as info:
        dispatch(SeparateKQ(3, 2), TASK, TrainConfig(method="task_sgd", lr=1e-2, steps=2))
    line = next(x for x in str(info.value).splitlines() if x.startswith("  - task_sgd"))
    assert "query_loss_grad: model separate does not" in line
    assert "sample_task: task linear_regression does not" in line


def test_snapshot_params_false_needs_the_models_series():
    cfg = dataclasses.replace(ADAM, snapshot_params=False)
    with pytest.raises(NoEngineError, match="snapshot_series: model separate does not"):
        dispatch(SeparateKQ(3, 2), TASK, cfg)
    assert dispatch(LinearTransformer(2), WishartTasks(2, context=5, tasks=3), cfg).engine is TORCH


def test_auto_says_why_the_faster_engine_did_not_apply():
    chosen = dispatch(MultiHeadSoftmax(3, 2), TASK, dataclasses.replace(ADAM, weight_decay=0.1))
    assert chosen.engine is TORCH
    assert chosen.backend["fallback"].startswith("not the fused He step: weight_decay > 0")
    told = dispatch(MultiHeadSoftmax(3, 2), TASK, dataclasses.replace(ADAM, sampler="tokens"))
    assert told.engine is TORCH and "fallback" not in told.backend     # asked for, not a fallback


def test_capabilities_are_read_off_classes_and_instances():
    assert QUERY_LOSS_GRAD.of(LinearTransformer) and QUERY_LOSS_GRAD.of(LinearTransformer(2))
    assert not QUERY_LOSS_GRAD.of(SeparateKQ)
    assert FORWARD_STATS.of(SeparateKQ(3, 2)) and not FORWARD_STATS.of(SoftmaxMergedKQ(3, 2))
    assert SNAPSHOT_SERIES.missing(SeparateKQ) == [
        f"{SNAPSHOT_SERIES.need}, which defines snapshot_series: model SeparateKQ does not"]


@pytest.fixture
def registered():
    """Engines a test registers, removed afterwards."""
    added: list[str] = []
    yield added
    for name in added:
        ENGINES.pop(name)


def test_a_registered_engine_is_tried_in_its_place(registered):
    """An engine registered before the torch engine, for one model kind, trains that kind's runs;
    a name taken or an unknown `before` is refused."""
    mine = Engine("mine", "a test engine", ("sgd", "adam"), TORCH.run,
                  lambda model, task, cfg: {"engine": "mine"}, samplers=("tokens", "auto"),
                  models=("separate",))
    register_engine(mine, before="torch")
    registered.append("mine")
    assert list(ENGINES)[-2:] == ["mine", "torch"]
    assert dispatch(SeparateKQ(3, 2), TASK, ADAM).engine is mine
    assert dispatch(SoftmaxMergedKQ(3, 2), TASK, ADAM).engine is TORCH
    traj = train(SeparateKQ(3, 2), TASK, ADAM)
    assert traj.backend["engine"] == "mine" and traj.config["train"]["sampler"] == "tokens"
    with pytest.raises(ValueError, match="'mine' is already registered"):
        register_engine(mine)
    with pytest.raises(ValueError, match="before='nope' is no engine"):
        register_engine(dataclasses.replace(mine, name="other"), before="nope")
