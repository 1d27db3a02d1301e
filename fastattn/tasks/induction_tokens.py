"""The token version of the induction task (Musat et al. 2025 §4, App. E; spec §9.2), on which the
standard attention-only transformer (`fastattn.models.standard_transformer`) is trained.

Each sequence draws 2K distinct tokens uniformly from a vocabulary of N_T, groups them into K
(item, label) pairs and picks one item uniformly as the query; the target is its label:

    tokens    = item_1 label_1 … item_K label_K query        `[B, L]`, L = 2K + 1
    positions = offset + (0, 1, …, 2K)                       `[B, L]`, offset ~ Unif{0..N_P − L}

("random" placement: the sequence sits at a random place in the block of N_P positions, App. E;
the offset's range is spec §12.9's reading; "start": offset 0). The loss is the cross-entropy of
the query position's logits against the target, averaged over the batch. Every step draws fresh
sequences, so the training loss is a test loss (Fig. 20).

The model's input is one-hot tokens: `dim` is the vocabulary size N_T (the trainers match it
against the model's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import torch
from torch.nn import functional as F

from fastattn import _validate as check
from fastattn.tasks.base import register_task
from fastattn.tasks.linear_regression import _generator

PLACEMENTS = ("random", "start")
_STREAM_TRAIN, _STREAM_FIXED, _STREAM_TEST = 21, 22, 23


class TokenBatch(NamedTuple):
    """tokens `[B, L]` and positions `[B, L]` (int64), target `[B]` (int64: the query's label),
    q `[B]` (int64, 1-based: the queried pair)."""

    tokens: torch.Tensor
    positions: torch.Tensor
    target: torch.Tensor
    q: torch.Tensor


@register_task
@dataclass(frozen=True)
class InductionTokens:
    """vocab: N_T; block: N_P (positions); pairs: K; placement: "random" | "start"; data_seed.

    Defaults: App. E's small configuration (N_T = N_P = 32, K = 8); the large one is
    `InductionTokens(64, 64, 16)`.
    """

    kind: ClassVar[str] = "induction_tokens"
    losses: ClassVar[tuple[str, ...]] = ("query",)
    vocab: int = 32
    block: int = 32
    pairs: int = 8
    placement: str = "random"
    data_seed: int = 0

    def __post_init__(self) -> None:
        V = check.positive_int("vocab", self.vocab)
        P = check.positive_int("block", self.block)
        K = check.positive_int("pairs", self.pairs)
        if 2 * K > V:
            raise ValueError(f"pairs={K} needs vocab >= 2*pairs = {2 * K} distinct tokens; got vocab={V}")
        if 2 * K + 1 > P:
            raise ValueError(f"a sequence of pairs={K} has 2*pairs+1 = {2 * K + 1} tokens; block={P} "
                             "must hold it")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement={self.placement!r} is unknown; use one of {list(PLACEMENTS)}")

    @property
    def dim(self) -> int:
        """The one-hot token dimension N_T (= vocab): what a model's input is built for."""
        return self.vocab

    @property
    def length(self) -> int:
        """L = 2K + 1 tokens."""
        return 2 * self.pairs + 1

    @property
    def sequence_size(self) -> int:
        return 2 * self.length + 1

    def baselines(self) -> dict[str, float]:
        """Cross-entropies of reference predictors (nats), the levels a training curve passes:
        "uniform" ln N_T (any input-blind model, e.g. at init), "context" ln 2K (uniform over the
        tokens in the sequence), "context_but_query" ln(2K − 1), "labels" ln K (uniform over the
        labels: the pairing is known but not which pair is queried); the induction head reaches 0."""
        K = self.pairs
        return {"uniform": math.log(self.vocab), "context": math.log(2 * K),
                "context_but_query": math.log(2 * K - 1), "labels": math.log(K)}

    def _draw(self, g: torch.Generator, B: int, device) -> TokenBatch:
        K, L = self.pairs, self.length
        chosen = torch.rand(B, self.vocab, generator=g).argsort(dim=-1)[:, :2 * K]   # 2K distinct
        items, labels = chosen[:, :K], chosen[:, K:]
        q = torch.randint(0, K, (B,), generator=g)
        rows = torch.arange(B)
        tokens = torch.empty(B, L, dtype=torch.long)
        tokens[:, 0:2 * K:2], tokens[:, 1:2 * K:2] = items, labels
        tokens[:, -1] = items[rows, q]
        if self.placement == "random":
            offset = torch.randint(0, self.block - L + 1, (B, 1), generator=g)
        else:
            offset = torch.zeros(B, 1, dtype=torch.long)
        positions = offset + torch.arange(L)
        return TokenBatch(tokens.to(device), positions.to(device), labels[rows, q].to(device),
                          (q + 1).to(device))

    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> TokenBatch:
        """Batch number `step`: a pure function of (data_seed, step). `dtype` is ignored (the
        batch holds integers); it is accepted as the Task protocol passes it."""
        check.positive_int("batch_size", batch_size)
        return self._draw(_generator(self.data_seed, step, _STREAM_TRAIN), batch_size, device)

    def loss(self, model: torch.nn.Module, batch: TokenBatch, name: str = "query") -> torch.Tensor:
        """Mean over the batch of the query position's cross-entropy; model(tokens, positions) →
        the query position's logits `[B, N_T]`."""
        if name not in self.losses:
            raise ValueError(f"loss={name!r} is unknown for task 'induction_tokens'; use one of "
                             f"{list(self.losses)}")
        return F.cross_entropy(model(batch.tokens, batch.positions), batch.target)

    def accuracy(self, model: torch.nn.Module, batch: TokenBatch) -> float:
        """Fraction of the batch whose arg-max logit is the target."""
        with torch.no_grad():
            return float((model(batch.tokens, batch.positions).argmax(-1) == batch.target).double().mean())

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> TokenBatch:
        if whiten:
            raise ValueError("task 'induction_tokens' has no whitening; pass whiten=False")
        return self._draw(_generator(seed, 0, _STREAM_FIXED), check.positive_int("size", size), device)

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, TokenBatch]:
        return {"query": self._draw(_generator(seed, 0, _STREAM_TEST), check.positive_int("size", size),
                                    device)}
