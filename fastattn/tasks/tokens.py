"""Token-sequence tasks for the transformer applications of Mainali & Teixeira 2025 (spec §9.8):
modular addition (the grokking task of Power et al. 2022 / Nanda et al. 2023) and repeated random
tokens (an in-context copy task on which two-layer attention-only models form induction heads).

Both are `Task`-protocol families (registered in `TASKS`), trained by `fastattn.train` on the
token transformer (`fastattn.models.Transformer`, kind "transformer"): a training batch is a pure
function of (data_seed, step), `loss(model, batch)` is the cross-entropy the trainer
differentiates, and `metrics(model, test_sets)` gives the held-out measures the trainer records
beside the loss (accuracies, the ICL score). `dim` is the input vocabulary (the trainers match it
against the model's), `n_ctx` the sequence length and `vocab_out` the number of classes: the
token transformer's card takes these three from the task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import torch
from torch.nn import functional as F

from fastattn import _validate as check
from fastattn.tasks.base import register_task
from fastattn.tasks.linear_regression import _generator

_STREAM_TRAIN, _STREAM_FIXED, _STREAM_TEST = 31, 32, 33


def _accuracy(logits: torch.Tensor, target: torch.Tensor) -> float:
    return float((logits.argmax(-1) == target).double().mean())


def _check_loss(kind: str, losses: tuple[str, ...], name: str) -> None:
    if name not in losses:
        raise ValueError(f"loss={name!r} is unknown for task {kind!r}; use one of {list(losses)}")


class LabelledTokens(NamedTuple):
    """tokens `[B, 3]` ("a b =") and labels `[B]` ((a + b) mod p), int64."""

    tokens: torch.Tensor
    labels: torch.Tensor


@register_task
@dataclass(frozen=True)
class ModularAddition:
    """(a + b) mod p from the tokens "a b =" (vocabulary p + 1; "=" is token p; classes 0..p-1).

    All p² pairs, split once by `split_seed`: a fraction `train_frac` trains, the rest tests. The
    model reads out at the "=" position (`last_only`). A batch of at least `n_train` pairs is the
    whole training split, the same every step (full batch, as in Nanda et al.); a smaller one draws
    that many pairs of the split without replacement, from (data_seed, step).
    """

    kind: ClassVar[str] = "modular_addition"
    losses: ClassVar[tuple[str, ...]] = ("query",)
    p: int = 113
    train_frac: float = 0.3
    split_seed: int = 0
    data_seed: int = 0

    def __post_init__(self) -> None:
        check.positive_int("p", self.p)
        if self.p < 2:
            raise ValueError(f"p must be at least 2 (the modulus); got {self.p}")
        if not 0 < self.train_frac < 1:
            raise ValueError(f"train_frac must be in (0, 1); got {self.train_frac}")
        if not 0 < self.n_train < self.p**2:
            raise ValueError(f"train_frac={self.train_frac} leaves {self.n_train} of the p² = "
                             f"{self.p**2} pairs for training; both splits need one: give a "
                             "train_frac nearer 0.5 or a larger p")

    @property
    def vocab(self) -> int:
        """Input tokens: 0..p-1 and "=" (= p)."""
        return self.p + 1

    @property
    def dim(self) -> int:
        """The input vocabulary (what a model's embedding is built for)."""
        return self.vocab

    @property
    def vocab_out(self) -> int:
        return self.p

    @property
    def n_ctx(self) -> int:
        return 3

    @property
    def n_train(self) -> int:
        """Pairs in the training split (round(train_frac · p²))."""
        return round(self.train_frac * self.p**2)

    @property
    def sequence_size(self) -> int:
        return 4

    def split(self) -> dict[str, LabelledTokens]:
        """{"train": the n_train training pairs, "test": the other p² − n_train}: the fixed split."""
        a, b = torch.cartesian_prod(torch.arange(self.p), torch.arange(self.p)).T
        tokens = torch.stack([a, b, torch.full_like(a, self.p)], 1)
        labels = (a + b) % self.p
        perm = torch.randperm(self.p**2, generator=torch.Generator().manual_seed(self.split_seed))
        n = self.n_train
        return {"train": LabelledTokens(tokens[perm[:n]], labels[perm[:n]]),
                "test": LabelledTokens(tokens[perm[n:]], labels[perm[n:]])}

    @staticmethod
    def _subset(data: LabelledTokens, size: int, g: torch.Generator) -> LabelledTokens:
        """`size` rows drawn without replacement (all of them, in order, when size ≥ the rows)."""
        if size >= len(data.labels):
            return data
        rows = torch.randperm(len(data.labels), generator=g)[:size]
        return LabelledTokens(data.tokens[rows], data.labels[rows])

    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> LabelledTokens:
        """Batch number `step`: the training split (batch_size ≥ n_train) or batch_size of its pairs
        drawn from (data_seed, step). `dtype` is ignored (the batch holds integers)."""
        check.positive_int("batch_size", batch_size)
        out = self._subset(self.split()["train"], batch_size,
                           _generator(self.data_seed, step, _STREAM_TRAIN))
        return LabelledTokens(out.tokens.to(device), out.labels.to(device))

    def loss(self, model: torch.nn.Module, batch: LabelledTokens, name: str = "query") -> torch.Tensor:
        """Cross-entropy (float64) of the "=" position's logits against (a + b) mod p."""
        _check_loss(self.kind, self.losses, name)
        return F.cross_entropy(model(batch.tokens, last_only=True)[:, 0].double(), batch.labels)

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> LabelledTokens:
        """`size` pairs of the training split drawn from `seed` (all of it when size ≥ n_train)."""
        if whiten:
            raise ValueError("task 'modular_addition' has no whitening; pass whiten=False")
        out = self._subset(self.split()["train"], check.positive_int("size", size),
                           _generator(seed, 0, _STREAM_FIXED))
        return LabelledTokens(out.tokens.to(device), out.labels.to(device))

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, LabelledTokens]:
        """{"train": the training split, "test": `size` held-out pairs drawn from `seed` (all of
        them, in the split's order, when size ≥ p² − n_train)}."""
        split = self.split()
        test = self._subset(split["test"], check.positive_int("size", size),
                            _generator(seed, 0, _STREAM_TEST))
        return {name: LabelledTokens(d.tokens.to(device), d.labels.to(device))
                for name, d in (("train", split["train"]), ("test", test))}

    @torch.no_grad()
    def metrics(self, model: torch.nn.Module, test_sets: dict[str, LabelledTokens]) -> dict[str, float]:
        """{"<set>_loss", "<set>_acc"} for each test set (train_loss, train_acc, test_loss, test_acc)."""
        out = {}
        for name, (tokens, labels) in test_sets.items():
            logits = model(tokens, last_only=True)[:, 0].double()
            out[f"{name}_loss"] = float(F.cross_entropy(logits, labels))
            out[f"{name}_acc"] = _accuracy(logits, labels)
        return out


class PeriodicTokens(NamedTuple):
    """tokens `[B, length]` and the period of each sequence `[B]`, int64."""

    tokens: torch.Tensor
    period: torch.Tensor


@register_task
@dataclass(frozen=True)
class RepeatedTokens:
    """Periodic random sequences: s uniform random tokens, then the same s tokens again and again up
    to `length` (token i = token i mod s), with the period s drawn per sequence uniformly from
    [length/4, 3·length/4]. Next-token cross-entropy on every position. Tokens before position s
    are unpredictable (loss ln V); later ones are predictable only in context, by an induction head
    (attend to the token after the previous occurrence of the current one), which needs two
    layers: with a random period no fixed positional offset finds the copy (with a fixed one, a
    single layer solves the task by position alone).

    ICL score (spec §8.7, adapted; `metrics`): mean loss on the predictable positions minus that on
    the unpredictable ones, on the held-out batch; it falls from ≈ 0 to ≈ −ln V as induction heads
    form.
    """

    kind: ClassVar[str] = "repeated_tokens"
    losses: ClassVar[tuple[str, ...]] = ("next_token",)
    vocab: int = 32
    length: int = 32
    data_seed: int = 0

    def __post_init__(self) -> None:
        check.positive_int("vocab", self.vocab)
        if self.vocab < 2:
            raise ValueError(f"vocab must be at least 2 (one token predicts nothing); got {self.vocab}")
        if self.length < 8:
            raise ValueError(f"length must be >= 8 (periods in [length/4, 3 length/4]); got {self.length}")

    @property
    def dim(self) -> int:
        """The input vocabulary (what a model's embedding is built for)."""
        return self.vocab

    @property
    def vocab_out(self) -> int:
        return self.vocab

    @property
    def n_ctx(self) -> int:
        return self.length

    @property
    def sequence_size(self) -> int:
        return self.length + 1

    def _draw(self, batch_size: int, seed: int, step: int) -> PeriodicTokens:
        # a pure function of (seed, step); this seeding is the one the recipes' numbers were made with
        g = torch.Generator().manual_seed(seed * 1_000_003 + step)
        first = torch.randint(0, self.vocab, (batch_size, self.length), generator=g)
        period = torch.randint(self.length // 4, 3 * self.length // 4 + 1, (batch_size,), generator=g)
        index = torch.arange(self.length)[None] % period[:, None]
        return PeriodicTokens(first.gather(1, index), period)

    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> PeriodicTokens:
        """Batch number `step`: a pure function of (data_seed, step). `dtype` is ignored."""
        out = self._draw(check.positive_int("batch_size", batch_size), self.data_seed, step)
        return PeriodicTokens(out.tokens.to(device), out.period.to(device))

    @staticmethod
    def token_losses(model: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
        """Per-position next-token losses `[B, length − 1]` (position i predicts token i + 1)."""
        logits = model(tokens[:, :-1]).double()
        return F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")

    def loss(self, model: torch.nn.Module, batch: PeriodicTokens,
             name: str = "next_token") -> torch.Tensor:
        _check_loss(self.kind, self.losses, name)
        return self.token_losses(model, batch.tokens).mean()

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> PeriodicTokens:
        """`size` sequences drawn from `seed` (full-batch training)."""
        if whiten:
            raise ValueError("task 'repeated_tokens' has no whitening; pass whiten=False")
        out = self._draw(check.positive_int("size", size), seed, 0)
        return PeriodicTokens(out.tokens.to(device), out.period.to(device))

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, PeriodicTokens]:
        """{"held_out": `size` sequences drawn from the evaluation `seed`}."""
        return {"held_out": self.fixed_dataset(size, seed, device=device)}

    @torch.no_grad()
    def metrics(self, model: torch.nn.Module, test_sets: dict[str, PeriodicTokens]) -> dict[str, float]:
        """{loss, unpredictable_loss, predictable_loss, icl_score} on the "held_out" set."""
        tokens, period = test_sets["held_out"]
        predictable = torch.arange(1, self.length, device=tokens.device)[None] >= period[:, None]
        losses = self.token_losses(model, tokens)                   # target index ≥ s: predictable
        late, early = float(losses[predictable].mean()), float(losses[~predictable].mean())
        return {"loss": float(losses.mean()), "unpredictable_loss": early,
                "predictable_loss": late, "icl_score": late - early}
