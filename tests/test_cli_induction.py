"""`fastattn train --task induction` (Musat et al. 2025): exact flow/GD of the pseudo-parameter
models and sampled SGD of the full disentangled transformer write the usual run record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastattn.cli import main
from fastattn.population import emergence

ORTHO = ["train", "--task", "induction", "--dim", "8", "--context", "4", "--data", "orthonormal",
         "--query", "last", "--init-scale", "0", "--quiet"]


def test_three_param_flow_record_matches_the_theory(tmp_path):
    t_icl = emergence.emergence_times(4)["t_icl"]
    assert main([*ORTHO, "--model", "three_param", "--method", "flow", "--t-end", str(2 * t_icl),
                 "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["config"]["model"]["kind"] == "three_param" and record["status"] == "t_end"
    arrays = np.load(tmp_path / "run.npz")
    # core time 2·t_ICL is the paper's t_ICL: the last tracked α₃ sits at the threshold ½
    assert arrays["params"][-1][0] == pytest.approx(0.5, abs=1e-5)


def test_gram19_gd_and_disentangled_sgd(tmp_path, capsys):
    assert main([*ORTHO, "--model", "gram19", "--method", "gd", "--lr", "0.5", "--steps", "50",
                 "--out", str(tmp_path), "--name", "gd"]) == 0
    assert np.load(tmp_path / "gd.npz")["params"].shape[-1] == 19
    assert main(["train", "--task", "induction", "--model", "disentangled", "--dim", "4", "--context", "2",
                 "--reduction", "mean", "--mask", "inclusive", "--init-scale", "0", "--method", "sgd",
                 "--lr", "1",
                 "--steps", "5", "--batch-size", "16", "--quiet", "--out", str(tmp_path),
                 "--name", "sgd"]) == 0
    assert np.load(tmp_path / "sgd.npz")["params"].shape[-1] == 28 * 16
    # the full model runs on its exact population gradient (tests/population/test_induction_full.py)
    assert main([*ORTHO, "--model", "disentangled", "--reduction", "sum", "--method", "flow", "--t-end", "1",
                 "--out", str(tmp_path)]) == 0
    assert np.load(tmp_path / "run.npz")["params"].shape[-1] == 28 * 64
    # the full model's exact objective is sum-reduced: a mean loss (Figs. 4/5's) is refused in one
    # line before --out exists
    assert main([*ORTHO, "--model", "disentangled", "--reduction", "mean", "--method", "flow",
                 "--t-end", "1", "--out", str(tmp_path / "mean")]) == 2
    assert "sum-reduced" in capsys.readouterr().err and not (tmp_path / "mean").exists()


def test_standard_transformer_adamw_on_the_token_task(tmp_path, capsys):
    """§4 / App. E: `--task induction_tokens --model standard_transformer`, AdamW via --weight-decay;
    the record rebuilds the task and the model's size; the pair is checked both ways."""
    base = ["train", "--task", "induction_tokens", "--vocab", "8", "--block", "10", "--pairs", "2",
            "--method", "adam", "--lr", "1e-3", "--steps", "3", "--batch-size", "4", "--quiet",
            "--out", str(tmp_path)]
    assert main([*base, "--model", "standard_transformer", "--d-model", "6",
                 "--weight-decay", "0.01"]) == 0
    config = json.loads((tmp_path / "run.json").read_text())["config"]
    assert config["task"] == {"kind": "induction_tokens", "vocab": 8, "block": 10, "pairs": 2,
                              "placement": "random", "data_seed": 0}
    assert config["model"]["d_model"] == 6 and config["train"]["weight_decay"] == 0.01
    assert np.load(tmp_path / "run.npz")["params"].shape[-1] == 2 * 8 * 6 + 10 * 6 + 8 * 36
    assert main([*base, "--model", "separate", "--name", "b"]) == 2
    assert "--model separate does not pair with --task induction_tokens; models for " \
        "induction_tokens: standard_transformer" in capsys.readouterr().err
    assert main(["train", "--model", "standard_transformer", "--method", "adam", "--lr", "1e-3",
                 "--steps", "1", "--quiet", "--out", str(tmp_path), "--name", "c"]) == 2
