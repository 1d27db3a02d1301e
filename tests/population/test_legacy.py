"""The deprecated positional `dims` tuples (fastattn/population/legacy.py): each old call still works
for one deprecation period, says so in one line naming the config call, and gives the numbers of
the config form exactly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fastattn import population
from fastattn.models import ARDiagConfig
from fastattn.models.cubic_mlp import CubicMLPConfig
from fastattn.models.linear_attention import MergedConfig, SeparateConfig
from fastattn.population import reference
from fastattn.population.autoregressive_positional import PositionalDiagObjective

from .conftest import random_moments, random_params


def _old(call):
    """(result, the one deprecation line) of an old-form call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    lines = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert len(lines) == 1, lines
    assert caught[0].filename == __file__          # the line names the user's call, not the library
    return out, lines[0]


def _same(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    elif isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("family", "dims", "config", "named"), [
    ("separate", (3, 2, 2), SeparateConfig(3, 2, rank=2), "dim=3, heads=2, rank=2"),
    ("merged", (3, 2, 1), MergedConfig(3, 2), "dim=3, heads=2"),
    ("merged", (3, 2), MergedConfig(3, 2), "dim=3, heads=2"),
    ("cubic_mlp", (3, 4, 7), CubicMLPConfig(3, 4), "dim=3, heads=4"),   # R meant nothing there
])
def test_the_family_functions_take_the_old_tuple_with_one_line(rng, family, dims, config, named):
    m, _, _ = random_moments(rng, config.dim)
    th = random_params(rng, config)
    u = rng.standard_normal(th.size)
    calls = {
        "n_params": (lambda: population.n_params(family, dims), lambda: population.n_params(config)),
        "gamma": (lambda: population.gamma(family, th, dims), lambda: population.gamma(config, th)),
        "loss_and_grad": (lambda: population.loss_and_grad(family, th, dims, m),
                          lambda: population.loss_and_grad(config, th, m)),
        "hessian": (lambda: population.hessian(family, th, dims, m, backend="torch"),
                    lambda: population.hessian(config, th, m, backend="torch")),
        "hvp": (lambda: population.hvp(family, th, u, dims, m),
                lambda: population.hvp(config, th, u, m)),
        "make_evaluator": (lambda: population.make_evaluator(family, dims, m).loss_grad(th),
                           lambda: population.make_evaluator(config, m).loss_grad(th)),
        "conserved_quantities": (lambda: population.conserved_quantities(family, th[None], dims),
                                 lambda: population.conserved_quantities(config, th[None])),
        "reference.loss_and_grad": (lambda: reference.loss_and_grad(family, th, dims, m),
                                    lambda: reference.loss_and_grad(config, th, m)),
        "reference.hessian": (lambda: reference.hessian(family, th, dims=dims, moments=m),
                              lambda: reference.hessian(config, th, m)),
    }
    for name, (old, new) in calls.items():
        out, line = _old(old)
        _same(out, new())
        assert f"write {name.split('.')[-1]}(config, ...) with the {family} model's config ({named})" \
            in line, line
        assert "deprecated" in line and "\n" not in line


def test_the_objectives_take_the_old_tuple_with_one_line(rng):
    m, _, _ = random_moments(rng, 3)
    config = SeparateConfig(3, 2, rank=2)
    th = random_params(rng, config)
    obj, line = _old(lambda: population.LinearAttentionObjective("separate", (3, 2, 2), m))
    assert "LinearAttentionObjective(config, moments) with the separate model's config (dim=3, " \
        "heads=2, rank=2)" in line
    _same(obj.loss_grad(th), population.LinearAttentionObjective(config, m).loss_grad(th))

    diag = ARDiagConfig(2, 3, context=4)
    x = 0.3 * rng.standard_normal(2 * 3 * 2 + 4 * 4)
    obj, line = _old(lambda: population.AutoRegressiveObjective("orthogonal", (2, 3, 4)))
    assert "AutoRegressiveObjective(context, config) with the diag model's config (dim=2, heads=3, " \
        "context=4)" in line
    _same(obj.loss_grad(x), population.AutoRegressiveObjective("orthogonal", diag).loss_grad(x))
    obj, line = _old(lambda: PositionalDiagObjective((2, 3, 4), 2.0))
    assert "PositionalDiagObjective(config, mu) with the diag model's config" in line
    _same(obj.loss_grad(x), PositionalDiagObjective(diag, 2.0).loss_grad(x))


def test_the_config_form_says_nothing(rng):
    m, _, _ = random_moments(rng, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        population.loss_and_grad(MergedConfig(2, 1), np.ones(5), m)
        population.AutoRegressiveObjective("unitary", ARDiagConfig(2, 1, context=3))


def test_bad_old_tuples_get_one_line_naming_the_fix(rng):
    m, _, _ = random_moments(rng, 3)
    th = np.ones(10)
    with pytest.raises(ValueError, match=r"dims=\(3, 0, 2\): heads.*pass the separate model.s config"):
        population.loss_and_grad("separate", th, (3, 0, 2), m)
    with pytest.raises(ValueError, match=r"dims=\(3,\) must be \(dim, heads, rank\) for separate"):
        population.n_params("separate", (3,))
    with pytest.raises(ValueError, match=r"dims=\('a', 2\) must be \(dim, heads\) of ints"):
        population.n_params("merged", ("a", 2))
    with pytest.raises(ValueError, match=r"family='attn' is unknown"):
        population.n_params("attn", (3, 2, 1))
    with pytest.raises(ValueError, match=r"dims=\(2, 1\) must be \(dim, heads, context\) for diag"):
        population.AutoRegressiveObjective("unitary", (2, 1))
