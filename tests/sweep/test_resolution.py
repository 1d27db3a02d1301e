"""A sweep resolves each grid point as `train` does (`fastattn.configs.resolve`: the cards'
defaults, then the pair's preset, then what the point gives), for every pair; and the Musat sweep
of issue 39 runs at the paper's zero init without --init-scale."""

from __future__ import annotations

import pytest

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from fastattn.configs import pairs, preset_for, resolve
from fastattn.configs.options import METHOD_FIELDS
from fastattn.population import emergence
from fastattn.sweep import grid, run_sweep

PAIRS = [(t, m) for t, models in pairs().items() for m in models]


@pytest.mark.parametrize(("task", "model"), PAIRS, ids=[f"{t}/{m}" for t, m in PAIRS])
def test_a_point_of_a_pair_resolves_to_the_pair_s_preset(task, model):
    """Issue 39: the sweep filled every option not given with the (linear_regression, separate)
    preset's value (Musat's three-parameter runs at init 0.01, He's at 5 heads). A point now holds
    only what it gives; its task and model values are `train`'s, and its trainer values too but
    for the sweep's own tolerances where the preset sets none."""
    spec = grid.resolve({"task": task, "model": model})
    r = resolve(task, model)
    assert spec["task"] == r.task and spec["model"] == r.model
    preset = preset_for(task, model).train_for(None)
    own = {k: v for k, v in grid.SWEEP_DEFAULTS.items()
           if k not in preset and r.train["method"] in METHOD_FIELDS[k]}
    assert spec["train"] == r.train | own
    assert grid.given({"task": task, "model": model}) == (task, model,
                                                          {"task": {}, "model": {}, "train": {}})


def test_a_point_gives_only_its_pair_s_options_and_seeds():
    _, _, given = grid.given({"task": "induction", "model": "three_param", "context": 5,
                              "rank": 2, "seed": 3})
    assert given == {"task": {"context": 5, "data_seed": 3}, "model": {"init_seed": 3},
                     "train": {"eval_seed": grid.EVAL_SEED_OFFSET + 3}}


def test_the_musat_sweep_runs_at_the_paper_s_zero_init(tmp_path):
    """Issue 39's acceptance: `fastattn sweep --task induction --model three_param --context 18`
    (with --dim 36: orthonormal data need D >= 2N) gave t_ICL = 556.6 at the separate preset's
    init 0.01; at the paper's zero init (the pair's preset) it is the exact emergence time 568.39
    of `population.emergence` (rtol 1e-10 there; the sweep's 1e-5 moves it by ~6e-6)."""
    df = run_sweep({"task": "induction", "model": "three_param", "context": 18, "dim": 36},
                   tmp_path, workers=0, progress=False)
    (row,) = df.to_dict("records")
    assert row["init_scale"] == 0.0 and row["query"] == "last" and row["data"] == "orthonormal"
    exact = emergence.emergence_times(18)["t_icl"]
    assert exact == pytest.approx(568.39, abs=0.01)
    assert row["t_icl"] == pytest.approx(exact, rel=1e-4)
