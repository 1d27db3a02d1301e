"""Transitional: fastattn.train on a token task equals the former train_tokens path bit for bit
(metrics, factors, parameters), before train_tokens is deleted."""

import numpy as np
import torch

from fastattn.models.transformer import Transformer
from fastattn.tasks.tokens import ModularAddition, RepeatedTokens
from fastattn.training import TrainConfig, train
from fastattn.training.tokens import TokenTrainConfig, train_tokens


def _compare(task, make, old_cfg, new_cfg, batch):
    tests = task.test_sets(new_cfg.test_size, new_cfg.eval_seed)
    old_model, new_model = make(), make()
    old = train_tokens(old_model, task.loss, lambda k: task.sample(batch, k),
                       lambda m: task.metrics(m, tests), old_cfg)
    new = train(new_model, task, new_cfg)
    for p, q in zip(old_model.parameters(), new_model.parameters(), strict=True):
        assert torch.equal(p, q)
    np.testing.assert_array_equal(old.step, new.step)
    assert set(old.metrics) == set(new.metrics)
    for name in old.metrics:
        np.testing.assert_array_equal(old.metrics[name], new.metrics[name])
    from fastattn.experiments.mainali2025 import apps
    from fastattn.experiments.recipe import Run, RunSpec
    run = Run(RunSpec("x", task, new_model.config, new_cfg), new, new_model)
    for kind in ("qk", "ov"):
        np.testing.assert_array_equal(old.matrices(kind), apps.head_matrices(run, kind))
    return old, new


def test_repeated_tokens_equal_the_old_path():
    task = RepeatedTokens(vocab=16, length=12)
    old_cfg = TokenTrainConfig(steps=40, lr=1e-2, weight_decay=0.05, betas=(0.9, 0.99), warmup=10,
                               n_records=12)
    new_cfg = TrainConfig(method="adam", steps=40, lr=1e-2, weight_decay=0.05, betas=(0.9, 0.99),
                          warmup=10, n_records=12, n_snapshots=12, batch_size=8, test_size=32,
                          threads=1)
    _compare(task, lambda: Transformer(vocab=16, n_ctx=12, d_model=16, n_layers=2, n_heads=4,
                                       layer_norm=True), old_cfg, new_cfg, 8)


def test_modular_addition_with_a_stop_equals_the_old_path():
    task = ModularAddition(p=11, train_frac=0.6)
    old_cfg = TokenTrainConfig(steps=300, lr=2e-2, weight_decay=1.0, betas=(0.9, 0.98), warmup=10,
                               n_records=30, stop=("train_acc", 0.5), patience=3)
    new_cfg = TrainConfig(method="adam", steps=300, lr=2e-2, weight_decay=1.0, betas=(0.9, 0.98),
                          warmup=10, n_records=30, n_snapshots=30, batch_size=task.n_train,
                          test_size=121, target_metric=("train_acc", 0.5), patience=3, threads=1)
    old, new = _compare(task, lambda: Transformer(vocab=12, vocab_out=11, n_ctx=3, d_model=16,
                                                  n_heads=4, d_mlp=32), old_cfg, new_cfg,
                        task.n_train)
    assert old.status == "stop" and new.status == "target_metric" and new.step[-1] < 300
