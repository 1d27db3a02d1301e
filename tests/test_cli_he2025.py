"""`fastattn train` with the He et al. 2025 model and task options."""

import json

import numpy as np

from fastattn.cli import main


def test_train_multihead_softmax_on_the_he2025_task(tmp_path):
    args = ["train", "--task", "linear_regression", "--model", "multihead_softmax", "--dim", "3",
            "--context", "7", "--heads", "2", "--noise", "0.1", "--spectrum", "identity",
            "--w-var", "0.5", "--method", "adam", "--lr", "1e-3", "--batch-size", "8",
            "--steps", "5", "--out", str(tmp_path), "--quiet"]
    assert main(args) == 0
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["config"]["model"]["kind"] == "multihead_softmax"
    assert record["config"]["task"]["w_cov"] == (0.5 * np.eye(3)).tolist()
    assert record["config"]["task"]["spectrum"] == [1.0, 1.0, 1.0]
    data = np.load(tmp_path / "run.npz")
    assert data["step"][-1] == 5 and np.all(np.isfinite(data["loss"]))


def test_toeplitz_covariance_and_family_checks(tmp_path, capsys):
    base = ["train", "--model", "multihead_softmax", "--dim", "3", "--context", "5", "--heads", "1",
            "--method", "adam", "--lr", "1e-3", "--batch-size", "4", "--steps", "1", "--quiet"]
    assert main([*base, "--cov-rho", "0.5", "--out", str(tmp_path)]) == 0
    cov = json.loads((tmp_path / "run.json").read_text())["config"]["task"]["cov"]
    np.testing.assert_allclose(cov, [[1, .5, .25], [.5, 1, .5], [.25, .5, 1]])
    assert main([*base, "--norm-context", "40", "--out", str(tmp_path)]) == 2
    assert "norm-context" in capsys.readouterr().err
