"""Token tasks of the transformer applications: modular addition's split and labels, periodic
random tokens' structure and held-out metrics."""

import math

import pytest
import torch

from fastattn.models.transformer import Transformer
from fastattn.tasks.tokens import ModularAddition, RepeatedTokens


def test_modular_addition_split_and_labels():
    task = ModularAddition(p=11, train_frac=0.3, split_seed=4)
    data = task.data()
    (xtr, ytr), (xte, yte) = data["train"], data["test"]
    assert len(ytr) == round(0.3 * 121) and len(ytr) + len(yte) == 121
    pairs = {tuple(r[:2].tolist()) for r in torch.cat([xtr, xte])}
    assert len(pairs) == 121                                     # every pair once, train ∩ test = ∅
    assert torch.all(torch.cat([xtr, xte])[:, 2] == 11)          # "=" token
    assert torch.equal(ytr, (xtr[:, 0] + xtr[:, 1]) % 11)
    again = ModularAddition(p=11, train_frac=0.3, split_seed=4).data()["train"][0]
    assert torch.equal(again, xtr)
    assert not torch.equal(ModularAddition(p=11, split_seed=5).data()["train"][0], xtr)
    with pytest.raises(ValueError, match="train_frac"):
        ModularAddition(p=11, train_frac=1.0)


def test_modular_addition_metrics_of_uniform_logits():
    """A model with zero unembedding predicts uniformly: loss ln p on both splits."""
    task = ModularAddition(p=7)
    model = Transformer(vocab=8, vocab_out=7, n_ctx=3, d_model=8, n_heads=2, d_mlp=8)
    with torch.no_grad():
        model.unembed.W_U.zero_()
    m = task.evaluator()(model)
    assert m["train_loss"] == pytest.approx(math.log(7)) and m["test_loss"] == pytest.approx(math.log(7))


def test_repeated_tokens_are_periodic_and_pure():
    task = RepeatedTokens(vocab=20, length=16, data_seed=3)
    tokens, period = task.sample(64, 5)
    assert tokens.shape == (64, 16) and period.min() >= 4 and period.max() <= 12
    for row, s in zip(tokens, period, strict=True):
        assert torch.equal(row[s:], row[: 16 - s])                # token i = token i − s
    assert torch.equal(task.sample(64, 5)[0], tokens)
    assert not torch.equal(task.sample(64, 6)[0], tokens)
    with pytest.raises(ValueError, match="eval_seed"):
        RepeatedTokens(data_seed=1, eval_seed=1)


def test_repeated_tokens_icl_score_of_an_oracle():
    """A model that copies the token one period back (read from the batch) has zero loss on the
    predictable positions: its ICL score is −(unpredictable loss)."""
    task = RepeatedTokens(vocab=10, length=12, eval_size=32)

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

    _, period = task.sample(32, 0, task.eval_seed)
    m = task.evaluator()(Oracle())
    assert m["predictable_loss"] < 1e-15
    assert m["unpredictable_loss"] == pytest.approx(math.log(10))
    assert m["icl_score"] == pytest.approx(-math.log(10))
