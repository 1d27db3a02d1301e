"""Bad input raises ValueError naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

from fastattn.models.autoregressive import ARDiagConfig
from fastattn.models.cubic_mlp import CubicMLPConfig
from fastattn.models.linear_attention import MergedConfig, SeparateConfig
from fastattn.population import (
    CoordinateEvent,
    FlowOptions,
    LinearAttentionObjective,
    Moments,
    hessian,
    integrate,
    linear_dims,
    loss_and_grad,
    make_evaluator,
)

from .conftest import random_moments, random_params


@pytest.fixture
def setup(rng):
    config = SeparateConfig(3, 2, rank=2)
    m, _, _ = random_moments(rng, 3)
    return config, m, random_params(rng, config)


def test_wrong_length(setup):
    config, m, th = setup
    with pytest.raises(ValueError, match="params has shape"):
        loss_and_grad(config, th[:-1], m)
    with pytest.raises(ValueError, match="params0"):
        integrate(LinearAttentionObjective(MergedConfig(3, 2), m), th, method="rk45", t_end=1.0)


def test_non_finite(setup):
    config, m, th = setup
    th = th.copy()
    th[0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        loss_and_grad(config, th, m)
    with pytest.raises(ValueError, match="params0 contains non-finite"):
        integrate(LinearAttentionObjective(config, m), th, method="rk45", t_end=1.0)


def test_bad_options(setup):
    config, m, th = setup
    with pytest.raises(ValueError, match="lr="):
        integrate(LinearAttentionObjective(config, m), th, method="euler", t_end=1.0, lr=0.0)
    with pytest.raises(ValueError, match="lr="):
        integrate(LinearAttentionObjective(config, m), th, method="euler", t_end=1.0)
    with pytest.raises(ValueError, match="dt="):
        integrate(LinearAttentionObjective(config, m), th, method="rk4", t_end=1.0, dt=-1.0)
    for t_end in (-1.0, 0.0, np.inf):
        with pytest.raises(ValueError, match="t_end="):
            integrate(LinearAttentionObjective(config, m), th, method="rk45", t_end=t_end)
    with pytest.raises(ValueError, match="method="):
        integrate(LinearAttentionObjective(config, m), th, method="bdf", t_end=1.0)
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="max_seconds="):
            integrate(LinearAttentionObjective(config, m), th, method="rk45", t_end=1.0,
                      max_seconds=bad)
    with pytest.raises(ValueError, match="family="):
        loss_and_grad("attn", th, (3, 2, 2), m)
    with pytest.raises(ValueError, match="no linear attention layout"):
        loss_and_grad(ARDiagConfig(3, 2, context=4), th, m)
    with pytest.raises(ValueError, match="record_times"):
        integrate(LinearAttentionObjective(config, m), th, method="rk45", t_end=1.0,
                  record_times=[])
    with pytest.raises(ValueError, match="record_times"):
        integrate(LinearAttentionObjective(config, m), th, method="rk45", t_end=1.0,
                  record_times=[0.5, 0.2])
    with pytest.raises(ValueError, match="record_times"):
        integrate(LinearAttentionObjective(config, m), th, method="rk45", t_end=1.0,
                  record_times=[0.5, 2.0])
    with pytest.raises(ValueError, match="backend="):
        loss_and_grad(config, th, m, backend="gpu")
    with pytest.raises(ValueError, match=r"dims=\(3, 0, 2\): heads"):
        loss_and_grad("separate", th, (3, 0, 2), m)


def test_moments_mismatch(setup, rng):
    config, m, th = setup
    m4, _, _ = random_moments(rng, 4)
    with pytest.raises(ValueError, match="moments"):
        loss_and_grad(config, th, m4)
    with pytest.raises(ValueError, match="moments"):
        loss_and_grad(config, np.stack([th] * 3), [m, m])
    with pytest.raises(ValueError, match="moments"):
        hessian(config, th, "not moments")
    bad = Moments(cov=np.full((3, 3), np.nan), w_second=np.eye(3), noise=0.0, inv_n=0.1)
    with pytest.raises(ValueError, match="moments"):
        integrate(LinearAttentionObjective(config, bad), th, method="rk45", t_end=1.0)


def test_flow_options_and_objective_forms(setup):
    config, m, th = setup
    obj = make_evaluator(config, m)
    with pytest.raises(ValueError, match="t_end is required"):
        integrate(obj, th)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['tend'\]"):
        integrate(obj, th, tend=1.0)
    with pytest.raises(ValueError, match="params0 has shape"):
        integrate(obj, th[:-1], t_end=1.0)
    with pytest.raises(ValueError, match="objective must be an Objective"):
        integrate("separate", th, FlowOptions(t_end=1.0))  # a family name: build its objective
    with pytest.raises(TypeError):
        integrate(obj, th, FlowOptions(t_end=1.0), "rk45")   # options beyond are keyword-only
    with pytest.raises(ValueError, match="objective must be an Objective"):
        integrate([obj, "x"], np.stack([th, th]), t_end=1.0)
    with pytest.raises(ValueError, match="needs a coordinate index >= 0"):
        FlowOptions(t_end=1.0, events=(CoordinateEvent(-1, 0.0),))
    with pytest.raises(ValueError, match="max_evals="):
        FlowOptions(t_end=1.0, max_evals=0)
    opts = FlowOptions(t_end=1.0, method="rk45")
    assert opts.replace(t_end=2.0).t_end == 2.0 and opts.t_end == 1.0
    with pytest.raises(ValueError, match="lr="):
        opts.replace(method="euler")
    r = integrate(obj, th, opts, rtol=1e-8)        # overrides on top of options
    assert r.status == "t_end" and r.t_final == 1.0


def test_linear_dims_reads_the_config_and_refuses_other_families():
    """The core's (D, H, R) from a config's fields: the rank of separate, 1 for merged and the MLP
    (whose flat vector has no rank), and one line naming the families for any other model."""
    assert linear_dims(SeparateConfig(5, 3, rank=2)) == (5, 3, 2)     # three distinct sizes
    assert linear_dims(MergedConfig(3, 2)) == linear_dims(CubicMLPConfig(3, 2)) == (3, 2, 1)
    with pytest.raises(ValueError, match="model kind 'diag' has no linear attention layout"):
        linear_dims(ARDiagConfig(3, 2, context=4))
