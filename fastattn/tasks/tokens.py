"""Token-sequence tasks for the transformer applications of Mainali & Teixeira 2025 (spec §9.8):
modular addition (the grokking task of Power et al. 2022 / Nanda et al. 2023) and repeated random
tokens (an in-context copy task on which two-layer attention-only models form induction heads).

Both give `fastattn.training.tokens.train_tokens` a training batch as a pure function of (seed,
step), the loss on it, and held-out metrics. They are not `Task`-protocol families (tokens in,
classes out; no in-context regression dimension), so they are not in `TASKS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch.nn import functional as F

from fastattn import _validate as check


def _accuracy(logits: torch.Tensor, target: torch.Tensor) -> float:
    return float((logits.argmax(-1) == target).double().mean())


@dataclass(frozen=True)
class ModularAddition:
    """(a + b) mod p from the tokens "a b =" (vocabulary p + 1; "=" is token p; classes 0..p-1).

    All p² pairs, split once by `split_seed`: a fraction `train_frac` trains (full batch), the rest
    tests. The model reads out at the "=" position (`last_only`).
    """

    kind: ClassVar[str] = "modular_addition"
    p: int = 113
    train_frac: float = 0.3
    split_seed: int = 0

    def __post_init__(self) -> None:
        check.positive_int("p", self.p)
        if not 0 < self.train_frac < 1:
            raise ValueError(f"train_frac must be in (0, 1); got {self.train_frac}")

    @property
    def vocab(self) -> int:
        return self.p + 1

    def data(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """{"train": (tokens [n, 3], labels [n]), "test": (...)}: the fixed split."""
        a, b = torch.cartesian_prod(torch.arange(self.p), torch.arange(self.p)).T
        tokens = torch.stack([a, b, torch.full_like(a, self.p)], 1)
        labels = (a + b) % self.p
        perm = torch.randperm(self.p**2, generator=torch.Generator().manual_seed(self.split_seed))
        n = round(self.train_frac * self.p**2)
        return {"train": (tokens[perm[:n]], labels[perm[:n]]),
                "test": (tokens[perm[n:]], labels[perm[n:]])}

    def batches(self) -> Any:
        """Full batch: the step-k batch is the training set for every k."""
        train = self.data()["train"]
        return lambda step: train

    @staticmethod
    def loss(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        tokens, labels = batch
        return F.cross_entropy(model(tokens, last_only=True)[:, 0].double(), labels)

    def evaluator(self) -> Any:
        """model → {train_loss, train_acc, test_loss, test_acc} on the fixed split."""
        data = self.data()

        @torch.no_grad()
        def evaluate(model: torch.nn.Module) -> dict[str, float]:
            out = {}
            for name, (tokens, labels) in data.items():
                logits = model(tokens, last_only=True)[:, 0].double()
                out[f"{name}_loss"] = float(F.cross_entropy(logits, labels))
                out[f"{name}_acc"] = _accuracy(logits, labels)
            return out

        return evaluate


@dataclass(frozen=True)
class RepeatedTokens:
    """Periodic random sequences: s uniform random tokens, then the same s tokens again and again up
    to `length` (token i = token i mod s), with the period s drawn per sequence uniformly from
    [length/4, 3·length/4]. Next-token cross-entropy on every position. Tokens before position s
    are unpredictable (loss ln V); later ones are predictable only in context, by an induction head
    (attend to the token after the previous occurrence of the current one), which needs two
    layers: with a random period no fixed positional offset finds the copy (with a fixed one, a
    single layer solves the task by position alone).

    ICL score (spec §8.7, adapted): mean loss on the predictable positions minus that on the
    unpredictable ones, on a held-out batch; it falls from ≈ 0 to ≈ −ln V as induction heads form.
    """

    kind: ClassVar[str] = "repeated_tokens"
    vocab: int = 32
    length: int = 32
    data_seed: int = 0
    eval_seed: int = 1
    eval_size: int = 256

    def __post_init__(self) -> None:
        check.positive_int("vocab", self.vocab)
        check.positive_int("eval_size", self.eval_size)
        if self.length < 8:
            raise ValueError(f"length must be >= 8 (periods in [length/4, 3 length/4]); got {self.length}")
        if self.eval_seed == self.data_seed:
            raise ValueError("eval_seed must differ from data_seed: the held-out batch must be "
                             "independent of the training stream")

    @property
    def n_ctx(self) -> int:
        return self.length

    def sample(self, batch_size: int, step: int, seed: int | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens `[B, length]`, periods `[B]`), a pure function of (seed, step) (seed: data_seed
        by default)."""
        g = torch.Generator().manual_seed((self.data_seed if seed is None else seed) * 1_000_003 + step)
        first = torch.randint(0, self.vocab, (batch_size, self.length), generator=g)
        period = torch.randint(self.length // 4, 3 * self.length // 4 + 1, (batch_size,), generator=g)
        index = torch.arange(self.length)[None] % period[:, None]
        return first.gather(1, index), period

    def batches(self, batch_size: int) -> Any:
        return lambda step: self.sample(batch_size, step)

    @staticmethod
    def token_losses(model: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
        """Per-position next-token losses `[B, length − 1]` (position i predicts token i + 1)."""
        logits = model(tokens[:, :-1]).double()
        return F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return self.token_losses(model, batch[0]).mean()

    def evaluator(self) -> Any:
        """model → {loss, unpredictable_loss, predictable_loss, icl_score} on the held-out batch."""
        tokens, period = self.sample(self.eval_size, 0, self.eval_seed)
        predictable = torch.arange(1, self.length)[None] >= period[:, None]     # target index ≥ s

        @torch.no_grad()
        def evaluate(model: torch.nn.Module) -> dict[str, float]:
            losses = self.token_losses(model, tokens)
            late, early = float(losses[predictable].mean()), float(losses[~predictable].mean())
            return {"loss": float(losses.mean()), "unpredictable_loss": early,
                    "predictable_loss": late, "icl_score": late - early}

        return evaluate
