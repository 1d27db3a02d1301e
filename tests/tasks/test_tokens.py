"""Token tasks of the transformer applications behind the Task protocol: registered by kind, a
batch a pure function of (data_seed, step), records rebuild the task, modular addition's split and
labels, periodic random tokens' structure, and the held-out metrics."""

import math
import re

import pytest
import torch

from fastattn.models.transformer import Transformer
from fastattn.tasks import TASKS, build_task, register_task
from fastattn.tasks.tokens import ModularAddition, RepeatedTokens
from fastattn.training.records import to_jsonable

TASKS_UNDER_TEST = (ModularAddition(p=11, train_frac=0.4, split_seed=3, data_seed=2),
                    RepeatedTokens(vocab=20, length=16, data_seed=3))


@pytest.mark.parametrize("task", TASKS_UNDER_TEST, ids=lambda t: t.kind)
def test_token_tasks_follow_the_protocol_and_are_registered(task):
    assert TASKS[task.kind] is type(task) and register_task(type(task)) is type(task)
    assert task.losses and task.dim == task.vocab and task.sequence_size > 0
    again = build_task({"kind": task.kind, **to_jsonable(task)})      # a run record's task
    assert again == task
    for step in (0, 5):
        a, b = task.sample(8, step), again.sample(8, step)
        for x, y in zip(a, b, strict=True):
            assert torch.equal(x, y)
    fixed = task.fixed_dataset(8, 4)
    assert all(torch.equal(x, y) for x, y in zip(fixed, task.fixed_dataset(8, 4), strict=True))
    tests = task.test_sets(8, 7)
    assert all(torch.equal(x, y) for name in tests
               for x, y in zip(tests[name], task.test_sets(8, 7)[name], strict=True))
    with pytest.raises(ValueError, match="no whitening"):
        task.fixed_dataset(8, 4, whiten=True)
    model = Transformer(vocab=task.vocab, vocab_out=task.vocab_out, n_ctx=task.n_ctx, d_model=8,
                        n_heads=2, dtype="float64")
    assert task.loss(model, task.sample(8, 1)).shape == ()
    with pytest.raises(ValueError, match=r"loss='mse' is unknown"):
        task.loss(model, task.sample(8, 1), "mse")


def test_modular_addition_split_labels_and_batches():
    task = ModularAddition(p=11, train_frac=0.3, split_seed=4)
    split = task.split()
    (xtr, ytr), (xte, yte) = split["train"], split["test"]
    assert len(ytr) == task.n_train == round(0.3 * 121) and len(ytr) + len(yte) == 121
    pairs = {tuple(r[:2].tolist()) for r in torch.cat([xtr, xte])}
    assert len(pairs) == 121                                     # every pair once, train ∩ test = ∅
    assert torch.all(torch.cat([xtr, xte])[:, 2] == 11)          # "=" token
    assert torch.equal(ytr, (xtr[:, 0] + xtr[:, 1]) % 11)
    assert torch.equal(ModularAddition(p=11, train_frac=0.3, split_seed=4).split()["train"][0], xtr)
    assert not torch.equal(ModularAddition(p=11, split_seed=5).split()["train"][0], xtr)
    # a batch of at least the split is the full batch, the same every step
    for step in (0, 9):
        assert torch.equal(task.sample(task.n_train, step).tokens, xtr)
        assert torch.equal(task.sample(10**6, step).labels, ytr)
    # a smaller one: distinct training pairs, a pure function of (data_seed, step)
    mini = task.sample(10, 3)
    rows = {tuple(r.tolist()) for r in mini.tokens}
    assert len(rows) == 10 and rows <= {tuple(r.tolist()) for r in xtr}
    assert torch.equal(mini.tokens, task.sample(10, 3).tokens)
    assert not torch.equal(mini.tokens, task.sample(10, 4).tokens)
    assert not torch.equal(mini.tokens, ModularAddition(p=11, split_seed=4, data_seed=1).sample(10, 3).tokens)
    # test sets: the training split and the held-out pairs (all of them, in order, or a subset)
    sets = task.test_sets(10**6, 1)
    assert torch.equal(sets["train"].tokens, xtr) and torch.equal(sets["test"].tokens, xte)
    sub = task.test_sets(5, 1)["test"]
    assert len(sub.labels) == 5 and {tuple(r.tolist()) for r in sub.tokens} <= \
        {tuple(r.tolist()) for r in xte}
    with pytest.raises(ValueError, match="train_frac"):
        ModularAddition(p=11, train_frac=1.0)


def test_modular_addition_metrics_of_uniform_and_perfect_logits():
    """A model with zero unembedding predicts uniformly: loss ln p on both splits; an oracle has
    accuracy 1 and loss ≈ 0."""
    task = ModularAddition(p=7)
    model = Transformer(vocab=8, vocab_out=7, n_ctx=3, d_model=8, n_heads=2, d_mlp=8)
    with torch.no_grad():
        model.unembed.W_U.zero_()
    m = task.metrics(model, task.test_sets(100, 1))
    assert set(m) == {"train_loss", "train_acc", "test_loss", "test_acc"}
    assert m["train_loss"] == pytest.approx(math.log(7)) and m["test_loss"] == pytest.approx(math.log(7))

    class Oracle(torch.nn.Module):
        def forward(self, tokens, last_only=False):
            return 50.0 * torch.nn.functional.one_hot((tokens[:, 0] + tokens[:, 1]) % 7, 7)[:, None]

    m = task.metrics(Oracle(), task.test_sets(100, 1))
    assert m["train_acc"] == m["test_acc"] == 1.0 and m["test_loss"] < 1e-15


def test_repeated_tokens_are_periodic_and_pure():
    task = RepeatedTokens(vocab=20, length=16, data_seed=3)
    tokens, period = task.sample(64, 5)
    assert tokens.shape == (64, 16) and period.min() >= 4 and period.max() <= 12
    for row, s in zip(tokens, period, strict=True):
        assert torch.equal(row[s:], row[: 16 - s])                # token i = token i − s
    assert torch.equal(task.sample(64, 5)[0], tokens)
    assert not torch.equal(task.sample(64, 6)[0], tokens)
    assert not torch.equal(RepeatedTokens(vocab=20, length=16, data_seed=4).sample(64, 5)[0], tokens)
    held_out = task.test_sets(64, 9)["held_out"]
    assert not torch.equal(held_out.tokens, task.sample(64, 0).tokens)  # its own seed


def test_repeated_tokens_icl_score_of_an_oracle():
    """A model that copies the token one period back (read from the batch) has zero loss on the
    predictable positions: its ICL score is −(unpredictable loss)."""
    task = RepeatedTokens(vocab=10, length=12)
    tests = task.test_sets(32, 1)
    period = tests["held_out"].period

    class Oracle(torch.nn.Module):
        def forward(self, tokens):
            b, t = tokens.shape
            logits = torch.zeros(b, t, 10, dtype=torch.float64)
            for i in range(b):
                s = int(period[i])
                for j in range(t):
                    if j + 1 >= s:
                        logits[i, j, tokens[i, j + 1 - s]] = 50.0
            return logits

    m = task.metrics(Oracle(), tests)
    assert m["predictable_loss"] < 1e-15
    assert m["unpredictable_loss"] == pytest.approx(math.log(10))
    assert m["icl_score"] == pytest.approx(-math.log(10))


@pytest.mark.parametrize(("make", "message"), [
    (lambda: ModularAddition(p=1), "p must be at least 2"),
    (lambda: ModularAddition(p=2, train_frac=0.1), "leaves 0 of the p² = 4 pairs for training"),
    (lambda: ModularAddition(p=2, train_frac=0.9), "leaves 4 of the p² = 4 pairs for training"),
    (lambda: RepeatedTokens(vocab=1), "vocab must be at least 2"),
])
def test_a_task_without_anything_to_learn_is_refused_in_one_line(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()
