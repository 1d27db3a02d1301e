"""TrainConfig's refusals name what is missing and how to give it."""

import pytest

from fastattn.training import TrainConfig


@pytest.mark.parametrize(("given", "missing"), [({"steps": 50}, "needs lr: give lr=0.01"),
                                                ({"lr": 0.1}, "needs steps: give steps=1000"),
                                                ({}, "needs lr and steps: give lr=0.01 and steps=1000")])
@pytest.mark.parametrize("method", ["gd", "sgd", "adam"])
def test_a_sampled_or_gd_run_names_the_missing_lr_or_steps(method, given, missing):
    with pytest.raises(ValueError, match=f"^method='{method}' {missing}$"):
        TrainConfig(method=method, **given)
