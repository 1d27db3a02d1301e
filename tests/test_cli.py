import json

import fastattn
from fastattn.cli import main


def test_info_reports_the_core_and_backends(capsys):
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["core"]["loaded"] == fastattn.has_cpp()
    assert report["versions"]["torch"]
    assert report["backends"]["torch-reference"]["available"] is True
    assert set(report["backends"]) >= {"triton-cuda", "triton-interpreter", "torch-reference"}


def test_cpp_core_is_loaded():
    """An installed fastattn always has its compiled core; a missing one is a broken install."""
    assert fastattn.has_cpp(), fastattn.info()["core"]["error"]


def test_train_command_writes_a_record_and_a_plot(tmp_path, capsys):
    import numpy as np

    args = ["train", "--model", "separate", "--dim", "4", "--heads", "5", "--rank", "1",
            "--context", "31", "--spectrum", "0.4,0.3,0.2,0.1", "--init", "1e-2",
            "--method", "flow", "--time", "2000", "--out", str(tmp_path), "--quiet"]
    assert main(args) == 0
    data = np.load(tmp_path / "run.npz")
    assert {"time", "loss"} <= set(data.files)
    assert np.isclose(data["time"][-1], 2000)
    assert (tmp_path / "run.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "run.json").read_text())["config"]["task"]["spectrum"] == \
        [0.4, 0.3, 0.2, 0.1]
    args = ["train", "--method", "gd", "--lr", "0.02", "--steps", "100", "--out", str(tmp_path),
            "--name", "gd", "--quiet"]
    assert main(args) == 0
    assert np.load(tmp_path / "gd.npz")["step"][-1] == 100
    assert "status=t_end" in capsys.readouterr().out
