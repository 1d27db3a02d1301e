"""`fastattn train --task autoregressive --model diag ...` trains the exact objective (spec §4.1's
summed loss, so the paper's learning rates reproduce its runs) and writes the usual run record."""

import json

import numpy as np

from fastattn.cli import main

BASE = ["train", "--task", "autoregressive", "--model", "diag", "--dim", "10", "--heads", "10",
        "--context", "20", "--init-scale", "0.1", "--quiet"]


def test_fig3_unitary_gd_run_and_its_record(tmp_path, capsys):
    """Fig. 3 left: lr 1e-2, 100 steps from ℓ(0) ≈ d(T_max − 1) = 190 to the Prop. 3 minimum."""
    args = [*BASE, "--context-dist", "unitary", "--method", "gd", "--lr", "0.01", "--steps", "100",
            "--out", str(tmp_path)]
    assert main(args) == 0
    data = np.load(tmp_path / "run.npz")
    assert data["step"][-1] == 100
    assert 180 < data["loss"][0] < 200 and data["loss"][-1] < 1e-8
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["config"]["task"]["kind"] == "autoregressive"
    assert record["config"]["model"] == {**record["config"]["model"], "kind": "diag", "context": 20}
    assert "status=steps" in capsys.readouterr().out


def test_orthogonal_flow_run(tmp_path):
    args = [*BASE, "--context-dist", "orthogonal", "--heads", "8", "--method", "flow", "--t-end", "20",
            "--out", str(tmp_path), "--name", "flow"]
    assert main(args) == 0
    loss = np.load(tmp_path / "flow.npz")["loss"]
    assert loss[-1] < 0.1 * loss[0]


def test_options_of_the_task_family_are_checked(tmp_path, capsys):
    assert main(["train", "--context-dist", "unitary", "--out", str(tmp_path), "--quiet"]) == 2
    assert "--context-dist does not apply to --task linear_regression (it applies to --task "\
        "autoregressive)" in capsys.readouterr().err


def test_non_augmented_model_takes_the_tasks_duplication(tmp_path):
    """`--model non_aug` (spec §3.6) reads E = k·d tokens: its `duplicate` follows the task's."""
    args = ["train", "--task", "autoregressive", "--context-dist", "haar", "--representation", "real",
            "--duplicate", "2", "--s1", "unit", "--model", "non_aug", "--dim", "3", "--heads", "2",
            "--context", "5", "--method", "adam", "--lr", "0.01", "--steps", "3", "--batch-size", "8",
            "--out", str(tmp_path), "--quiet"]
    assert main(args) == 0
    model = json.loads((tmp_path / "run.json").read_text())["config"]["model"]
    assert model["kind"] == "non_aug" and model["duplicate"] == 2 and model["lookahead"] is False
