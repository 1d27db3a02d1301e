"""Wrong input shapes are named by the user's argument with both shapes (issue 14 item 13)."""

import re

import pytest
import torch

from fastattn.configs import pairs
from fastattn.models import MODELS, build_model

B, N, D = 5, 7, 3
#: the models of the linear-regression task, which take (x, y, x_q); the others take other inputs
#: (autoregressive: token sequences; linear_transformer: vector labels y `[B, N, D]`;
#: multioutput_softmax: y `[B, N, outputs]`, tested in test_multioutput_softmax.py)
REGRESSION_MODELS = sorted(pairs()["linear_regression"])


def inputs(**wrong):
    g = torch.Generator().manual_seed(0)
    shapes = {"x": (B, N, D), "y": (B, N), "x_q": (B, D)} | wrong
    return {k: torch.randn(s, generator=g, dtype=torch.float64) for k, s in shapes.items()}


@pytest.mark.parametrize("kind", REGRESSION_MODELS)
@pytest.mark.parametrize(("name", "shape", "want"), [
    ("x", (B, N, D + 1), f"[B, N, D={D}]"),
    ("x_q", (B, D + 2), f"[B={B}, D={D}]"),
    ("y", (B, N + 1), f"[B={B}, N={N}]"),
    ("x", (B, D), f"[B, N, D={D}]"),
])
def test_a_wrong_input_names_the_argument_and_both_shapes(kind, name, shape, want):
    model = build_model(MODELS[kind].config(dim=D, heads=2))
    args = inputs(**{name: shape})
    with pytest.raises(ValueError, match=re.escape(f"{name} has shape {list(shape)}; it must be "
                                                   f"{want}")):
        model(args["x"], args["y"], args["x_q"])


def test_the_shape_check_passes_good_inputs_and_checks_the_fused_path():
    model = build_model(MODELS["separate"].config(dim=D, heads=2))
    args = inputs()
    assert model(args["x"], args["y"], args["x_q"]).shape == (B,)
    with pytest.raises(ValueError, match=re.escape(f"b has shape [{B}, {D + 1}]")):
        model.forward_stats(torch.zeros(B, D + 1, dtype=torch.float64), args["x_q"])
