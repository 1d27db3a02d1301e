"""No prediction reads a token after the ones its position may read: the masks, tested for every
family whose predictions run along a sequence (issue 36: a forgotten mask passed every generic
test).

Generic over the registry: every model family the autoregressive task pairs with (row q of
`predict(tokens)` `[N, T_max−1, d]` reads e_1..e_{q+2}, tasks/autoregressive.py), every
linear-regression family with `predict_next_token` (the prediction at position t reads x_1..x_t
and y_1..y_{t−1}), and the token transformer on the next-token task (position t reads tokens
1..t). Every parameter is random and non-zero, the entries a mask hides included, so a dropped
mask changes some prediction; each check also shows that redrawing the first token a prediction
may not read changes a later one (the test can see a dependence)."""

from __future__ import annotations

import pytest
import torch

from fastattn.configs import pairs
from fastattn.training.build import build_default
from helpers import seeded_torch

N = 3
#: the masked and unmasked paths run the same instructions on the kept entries, so a prediction
#: that reads only kept tokens is equal to rounding (softmax rows renormalised over the same keys)
RTOL = 1e-12


def _randomize(model: torch.nn.Module, gen: torch.Generator) -> None:
    """Every parameter random, in float64 (the families that train in float32 too)."""
    model.double()
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point():
                p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=p.dtype))


def _check_prefix_only(predict, inputs: list[torch.Tensor], fresh: list[torch.Tensor],
                       reads: int, n_rows: int) -> None:
    """predict(*inputs) `[N, n_rows, ...]`, whose row q reads positions < q + `reads` of each input
    `[N, T, ...]`: redrawing positions ≥ c (from `fresh`) keeps rows q < c − reads + 1 and changes
    a row ≥ it."""
    predict = torch.no_grad()(predict)
    base = predict(*inputs)
    T = inputs[0].shape[1]
    for c in range(reads, T):
        cut = [torch.cat([x[:, :c], f[:, c:]], 1) for x, f in zip(inputs, fresh, strict=True)]
        out = predict(*cut)
        kept = c - reads + 1
        scale = float(base.abs().max())
        assert torch.allclose(out[:, :kept], base[:, :kept], rtol=0, atol=RTOL * scale), (
            f"rows < {kept} read positions ≥ {c}: a prediction depends on tokens after its "
            f"context (max change {(out[:, :kept] - base[:, :kept]).abs().max():.3g})")
        if kept < n_rows:
            assert not torch.allclose(out[:, kept:], base[:, kept:], rtol=0, atol=RTOL * scale), (
                f"redrawing positions ≥ {c} changed no prediction: the check cannot see a mask")


@pytest.mark.parametrize("kind", sorted(pairs()["autoregressive"]))
def test_autoregressive_predictions_read_only_their_context(kind, rng):
    task, model, _ = build_default("autoregressive", kind, task={"context": 7})
    _randomize(model, seeded_torch(rng))
    step = int(rng.integers(1000))
    tokens, fresh = task.sample(N, step).tokens, task.sample(N, step + 1).tokens
    _check_prefix_only(model.predict, [tokens], [fresh], reads=2, n_rows=tokens.shape[1] - 1)


def _next_token_families() -> list[str]:
    out = []
    for kind in sorted(pairs()["linear_regression"]):
        _, model, _ = build_default("linear_regression", kind)
        if hasattr(model, "predict_next_token"):
            out.append(kind)
    return out


@pytest.mark.parametrize("kind", _next_token_families())
def test_next_token_regression_predictions_read_only_earlier_labels(kind, rng):
    task, model, _ = build_default("linear_regression", kind)
    gen = seeded_torch(rng)
    _randomize(model, gen)
    T = 6
    x, x2 = (torch.randn(N, T, task.dim, generator=gen, dtype=torch.float64) for _ in range(2))
    y, y2 = (torch.randn(N, T, generator=gen, dtype=torch.float64) for _ in range(2))
    # row q (position q + 2, 1-based) reads x_1..x_{q+2} and y_1..y_{q+1}: labels first, then x
    _check_prefix_only(lambda xx, yy: model.predict_next_token(xx, yy), [x, y], [x, y2],
                       reads=1, n_rows=T - 1)
    _check_prefix_only(lambda xx, yy: model.predict_next_token(xx, yy), [x, y], [x2, y],
                       reads=2, n_rows=T - 1)


def test_token_transformer_logits_read_only_earlier_tokens(rng):
    task, model, _ = build_default("repeated_tokens", "transformer")
    _randomize(model, seeded_torch(rng))
    tokens = task.fixed_dataset(N, int(rng.integers(1000))).tokens
    fresh = task.fixed_dataset(N, int(rng.integers(1000, 2000))).tokens
    _check_prefix_only(lambda t: model(t).double(), [tokens], [fresh], reads=1,
                       n_rows=tokens.shape[1])
