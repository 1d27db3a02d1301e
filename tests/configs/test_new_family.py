"""Issue 24 acceptance: a new model family touches only its own files: its config (a dataclass),
its model (registered in `MODELS`) and its card (shapes, options, the tasks it pairs with and their
presets). Here one is defined in the test and appears in `fastattn train --help`, `fastattn info`,
`MODELS`, the options the sweep offers, and trains from the CLI with its preset."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from fastattn.cli import main
from fastattn.configs import MODEL_CARDS, Field, ModelCard, Preset, all_options, register_model_card
from fastattn.configs.common import HEADS, INIT_SEED
from fastattn.models import MODELS, BaseModelConfig, ICLModel, register_model


@dataclass(frozen=True)
class ShrunkEstimatorConfig(BaseModelConfig):
    """ŷ = Σ_h v_h · shrink · (1/N Σ_n y_n x_n)ᵀ x_q: H scalars on the plug-in estimator."""

    kind = "shrunk_estimator"
    shrink: float = 1.0


class ShrunkEstimator(ICLModel):
    config_class = ShrunkEstimatorConfig

    @classmethod
    def init_variances(cls, config: ShrunkEstimatorConfig) -> dict[str, float]:
        return {"v": config.init_scale ** 2}

    def forward(self, x, y, x_q, lengths=None):
        beta = (y[..., None] * x).mean(1)                       # [B, D]
        return self.v.sum() * self.config.shrink * (beta * x_q).sum(-1)


CARD = ModelCard(
    "shrunk_estimator", "a test", "H scalars on the plug-in estimator",
    (HEADS, INIT_SEED, Field("init_scale", float, "std of v"),
     Field("shrink", float, "the estimator's factor", 1.0)),
    lambda c: (("v", (c.heads,)),),
    {"linear_regression": (Preset("toy", "a test's own setup", task={"dim": 3, "context": 9},
                                  model={"heads": 2, "init_scale": 0.1, "shrink": 0.5},
                                  train={"method": "sgd", "lr": 0.01, "steps": 5,
                                         "batch_size": 16}),)})


@pytest.fixture
def new_family():
    register_model(ShrunkEstimator)
    register_model_card(CARD)
    yield
    del MODELS["shrunk_estimator"], MODEL_CARDS["shrunk_estimator"]


def test_a_new_family_appears_everywhere_and_trains_with_its_preset(new_family, tmp_path, capsys):
    assert MODELS["shrunk_estimator"].model is ShrunkEstimator
    with pytest.raises(SystemExit):
        main(["train", "--help-all"])
    out = capsys.readouterr().out
    part = out[out.index("\nmodel shrunk_estimator (a test)"):]
    assert "--shrink SHRINK: the estimator's factor (default: 0.5)" in part
    assert "with --task linear_regression: a test's own setup" in part
    shrink = next(o for o in all_options() if o.flag == "--shrink")        # the sweep's options
    assert (shrink.target, shrink.families) == ("model", ("shrunk_estimator",))
    with pytest.raises(SystemExit):
        main(["sweep", "--model", "shrunk_estimator", "--help"])
    assert "--shrink SHRINK: the estimator's factor (default: 0.5)" in capsys.readouterr().out
    assert main(["info"]) == 0
    assert "shrunk_estimator" in capsys.readouterr().out
    assert main(["train", "--task", "linear_regression", "--model", "shrunk_estimator", "--quiet",
                 "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["config"]["model"] | {"dim": 3} == record["config"]["model"]
    assert (record["config"]["model"]["shrink"], record["config"]["train"]["steps"]) == (0.5, 5)
    assert record["meta"]["preset"]["name"] == "toy"
    assert main(["train", "--task", "autoregressive", "--model", "shrunk_estimator",
                 "--out", str(tmp_path / "no")]) == 2
    assert "models for autoregressive: diag" in capsys.readouterr().err
