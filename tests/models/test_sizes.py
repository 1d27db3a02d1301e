"""Every registered (task, model) pair trains at sizes away from its preset (issue 36 item 2: a
wrong parameter shape at a non-default depth passed the layout tests, which compare the model's
blocks with the card they were built from).

Generic over the registry (`configs.pairs()`): at random configurations of each pair
(tests/population/states.py: every integer field drawn from 1–4: dim, layers, heads, rank,
outputs, context, ...; choices and seeds redrawn), the task's sampled loss and its gradient run,
are finite, and every trainable block gets a gradient of the card's shape. The forward code is
the independent reader here: a card shape sized by the wrong field, right only at the preset,
fails where the forward indexes or contracts the block at the drawn size."""

from __future__ import annotations

import math

import pytest
import torch
from population.states import draw_values, non_default

from fastattn.configs import model_card, pairs, resolve
from fastattn.training.build import build_run

PAIRS = [(t, m) for t, models in pairs().items() for m in sorted(models)]
#: configurations per pair; the draws that a task or model refuses (a value out of its range) are
#: skipped, up to TRIES
N_STATES, POOL, TRIES = 3, 12, 400
BATCH = 4


def _draw(pair, rng) -> dict:
    """The pair's values with every field redrawn (`draw_values`), then each field put back to the
    preset's value with probability 1/2: a family whose fields need values above 1–4 (a sequence
    length ≥ 8, supports inside dim) still builds at other fields' small values."""
    drawn, preset = draw_values(*pair, rng), resolve(*pair)
    return {t: {k: (v if rng.integers(2) else getattr(preset, t).get(k, v)) for k, v in vals.items()}
            for t, vals in drawn.items()}


def _built(pair, rng):
    """Up to N_STATES (values, task, model) of `pair` at drawn sizes: of the first POOL that build,
    those with the most integer fields away from the preset."""
    out = []
    for _ in range(TRIES):
        values = _draw(pair, rng)
        values["model"].pop("dtype", None)      # the family's own dtype: float32 ones run so
        try:            # the front door every run takes (resolve: presets, then the values)
            task, model, _ = build_run({"task": values["task"], "model": values["model"]})
        except ValueError:
            continue
        out.append((values, task, model))
        if len(out) == POOL:
            break
    return sorted(out, key=lambda b: -non_default(*pair, b[0]))[:N_STATES]


@pytest.mark.parametrize("pair", PAIRS, ids="/".join)
def test_every_pair_trains_at_non_default_sizes(pair, rng):
    built = _built(pair, rng)
    assert len(built) >= 2, f"{pair}: fewer than two of {TRIES} drawn configurations build"
    assert max(non_default(*pair, v) for v, _, _ in built) >= 1, f"{pair}: no size moved"
    card = model_card(pair[1])
    for values, task, model in built:
        where = f"{pair} at {values['model']} on {values['task']}"
        if card.shapes is not None:
            assert {n: tuple(s) for n, s in card.shapes(model.config)} == \
                {n: tuple(getattr(model, n).shape) for n, _ in card.shapes(model.config)}, where
        params = [p for p in model.parameters() if p.requires_grad]
        gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
        with torch.no_grad():       # every block non-zero; ~1/√fan-in, so deep stacks stay finite
            for p in params:
                scale = 0.5 / math.sqrt(max(1, p.shape[-1])) if p.ndim else 0.5
                p.add_(scale * torch.randn(p.shape, dtype=p.dtype, generator=gen))
        dtype = params[0].dtype if params[0].is_floating_point() else torch.float64
        loss = task.loss(model, task.sample(BATCH, int(rng.integers(1000)), dtype=dtype))
        assert loss.ndim == 0 and bool(torch.isfinite(loss)), where
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        # the loss reads the parameters, unless it is saturated at 0 (a token model's cross
        # entropy at large random weights)
        moved = any(g is not None and bool(g.abs().sum() > 0) for g in grads)
        assert moved or float(loss.detach()) == 0, where
        for p, g in zip(params, grads, strict=True):
            if g is not None:
                assert g.shape == p.shape and bool(torch.isfinite(g).all()), where
