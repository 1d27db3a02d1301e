"""InductionTokens (Musat et al. 2025 App. E, spec §9.2): the layout of a sequence, distinct tokens,
placement in the block, batches as pure functions of (seed, step), the loss, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional as F

from fastattn.tasks import TASKS, InductionTokens, build_task
from fastattn.training.records import to_jsonable


def test_layout_targets_and_distinct_tokens():
    task = InductionTokens(vocab=20, block=15, pairs=4, data_seed=3)
    b = task.sample(500, step=2)
    K, L = 4, 9
    assert b.tokens.shape == b.positions.shape == (500, L) and b.target.shape == (500,)
    assert b.tokens.dtype == torch.long and int(b.tokens.max()) < 20
    pairs = b.tokens[:, :2 * K]
    assert all(len(set(row.tolist())) == 2 * K for row in pairs)           # 2K distinct tokens
    rows = torch.arange(500)
    assert torch.equal(b.tokens[:, -1], pairs[rows, 2 * (b.q - 1)])         # the query is item q
    assert torch.equal(b.target, pairs[rows, 2 * (b.q - 1) + 1])            # its label is the target
    assert set(b.q.tolist()) == set(range(1, K + 1))
    assert TASKS["induction_tokens"] is InductionTokens and task.dim == 20 and task.length == L


def test_placement_in_the_block():
    b = InductionTokens(vocab=20, block=15, pairs=4).sample(2000, step=0)
    offset = b.positions[:, :1]
    assert torch.equal(b.positions - offset, torch.arange(9).expand(2000, -1))
    assert set(offset.flatten().tolist()) == set(range(15 - 9 + 1))         # Unif{0..N_P − L}
    start = InductionTokens(vocab=20, block=15, pairs=4, placement="start").sample(10, step=0)
    assert torch.equal(start.positions, torch.arange(9).expand(10, -1))
    # uniform tokens: each of the 20 is chosen for the 2K slots with probability 2K/N_T = 0.4
    freq = torch.bincount(b.tokens[:, :8].flatten(), minlength=20).double() / 2000
    assert torch.all((freq - 0.4).abs() < 4 * math.sqrt(0.4 * 0.6 / 2000))


def test_batches_are_pure_functions_of_seed_and_step():
    t = InductionTokens(16, 16, 4)
    a, b, c = t.sample(8, step=5), t.sample(8, step=5), t.sample(8, step=6)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a.tokens, c.tokens)
    assert not torch.equal(a.tokens, InductionTokens(16, 16, 4, data_seed=1).sample(8, step=5).tokens)
    again = build_task({"kind": t.kind, **to_jsonable(t)})
    assert torch.equal(again.sample(8, step=5).tokens, a.tokens)
    test = t.test_sets(8, seed=9)["query"]
    assert not torch.equal(test.tokens, a.tokens)
    assert torch.equal(t.fixed_dataset(8, seed=4).tokens, t.fixed_dataset(8, seed=4).tokens)


class _Oracle(torch.nn.Module):
    """Logit s on the target (read off the sequence: the token after the query's first occurrence)."""

    def __init__(self, s: float, vocab: int) -> None:
        super().__init__()
        self.s, self.vocab = s, vocab

    def forward(self, tokens, positions):
        hit = (tokens[:, :-1:2] == tokens[:, -1:]).double().argmax(-1)
        label = tokens[torch.arange(len(tokens)), 2 * hit + 1]
        return self.s * F.one_hot(label, self.vocab).double()


def test_loss_is_the_query_cross_entropy_and_the_baselines():
    task = InductionTokens(12, 12, 3)
    b = task.sample(64, step=0)
    # logit s on the target and 0 elsewhere: −log(e^s / (e^s + N_T − 1))
    for s in (0.0, 2.0):
        want = -math.log(math.exp(s) / (math.exp(s) + 11))
        assert float(task.loss(_Oracle(s, 12), b)) == pytest.approx(want, rel=1e-12)
    assert task.accuracy(_Oracle(1.0, 12), b) == 1.0
    base = task.baselines()
    assert base["uniform"] == pytest.approx(math.log(12)) and base["labels"] == pytest.approx(math.log(3))
    with pytest.raises(ValueError, match="loss='next' is unknown"):
        task.loss(_Oracle(1.0, 12), b, "next")


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="vocab >= 2\\*pairs = 18"):
        InductionTokens(vocab=16, block=32, pairs=9)
    with pytest.raises(ValueError, match="block=16 must hold it"):
        InductionTokens(vocab=32, block=16, pairs=8)
    with pytest.raises(ValueError, match="placement='end' is unknown"):
        InductionTokens(placement="end")
    with pytest.raises(ValueError, match="batch_size"):
        InductionTokens().sample(0)
