"""Musat §11's presets reach the same paper time for every parametrisation: the integrators' time is
2 × paper time for the pseudo-parameters and 2D × paper time for the full weights
(DisentangledFullObjective.paper_time), so one t_end for all three would stop the full model early."""

import pytest

from fastattn.configs import resolve
from fastattn.population.induction_full import DisentangledFullObjective


@pytest.mark.parametrize("dim", [8, 16])
def test_full_weights_preset_reaches_the_pseudo_parameters_paper_time(dim):
    given = {"task": {"data": "orthonormal", "dim": dim, "context": dim // 2}}
    paper = {kind: resolve("induction", kind, given).train["t_end"] / 2 for kind in ("gram19", "three_param")}
    full = resolve("induction", "disentangled", given)
    assert full.train["t_end"] > 400.0
    assert DisentangledFullObjective(dim, dim // 2).paper_time(full.train["t_end"]) == \
        pytest.approx(paper["gram19"]) == paper["three_param"]
