import json

import numpy as np

import fastattn
from fastattn.cli import main


def test_info_reports_the_core_and_backends(capsys):
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["core"]["loaded"] == fastattn.has_cpp()
    assert report["versions"]["torch"]
    assert report["backends"]["torch-reference"]["available"] is True
    assert set(report["backends"]) >= {"triton-cuda", "triton-interpreter", "torch-reference"}
    assert "linear_regression" in report["registries"]["tasks"]
    assert "separate" in report["registries"]["models"]


def test_cpp_core_is_loaded():
    """An installed fastattn always has its compiled core; a missing one is a broken install."""
    assert fastattn.has_cpp(), fastattn.info()["core"]["error"]


def test_train_command_writes_a_record_and_a_plot(tmp_path, capsys):


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


def test_train_help_shows_each_family_under_its_own_heading(capsys):
    import pytest

    from fastattn.models import MODELS
    from fastattn.tasks import TASKS

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    for heading in ("task options (every family):", "task options (linear_regression):",
                    "task options (linear_regression, wishart_tasks):", "task options (wishart_tasks):",
                    "model options (every family):", "model options (separate, softmax_separate):",
                    "model options (softmax_merged, softmax_separate):", "trainer options:"):
        assert heading in out
    lr = out.index("task options (linear_regression, wishart_tasks):")
    assert lr < out.index("--spectrum SPECTRUM  ") < out.index("model options (every family):")
    separate = out.index("model options (separate, softmax_separate):")
    assert separate < out.index("--rank RANK  ") < out.index("model options (merged):")
    assert all(kind in out for kind in [*TASKS, *MODELS])


def test_every_option_family_is_registered():
    from fastattn.cli_options import OPTIONS
    from fastattn.models import MODELS
    from fastattn.tasks import TASKS

    for opt in OPTIONS:
        assert set(opt.families) <= set(TASKS if opt.target == "task" else MODELS), opt.flag


def test_train_task_option_and_family_errors(tmp_path):
    import pytest

    base = ["train", "--method", "gd", "--lr", "0.02", "--steps", "3", "--out", str(tmp_path),
            "--quiet"]
    assert main([*base, "--task", "linear_regression", "--model", "merged", "--full", "false"]) == 0
    meta = json.loads((tmp_path / "run.json").read_text())["config"]
    assert meta["task"]["kind"] == "linear_regression" and meta["model"]["kind"] == "merged"
    with pytest.raises(ValueError, match=r"task='ar' is unknown.*linear_regression"):
        main([*base, "--task", "ar"])
    with pytest.raises(ValueError, match=r"--rank applies to model separate, softmax_separate; "
                                         "not to --model merged"):
        main([*base, "--model", "merged", "--rank", "2"])
    with pytest.raises(ValueError, match=r"--scale applies to model softmax_merged"):
        main([*base, "--scale", "2"])


def test_full_merged_is_its_own_family():
    from fastattn.cli_options import build_run, model_config

    config = model_config({"kind": "merged", "full": True, "heads": 3, "rank": 2}, dim=4)
    assert (config.kind, config.heads) == ("merged_full", 3)
    spec = {"task": {"kind": "linear_regression", "dim": 3, "context": [2, 4],
                     "spectrum": "linear"},
            "model": {"kind": "separate", "heads": 2, "rank": 2, "full": False, "scale": 1.0},
            "train": {"method": "sgd", "lr": 0.1, "steps": 2}}
    task, model, cfg = build_run(spec)
    assert task.context == (2, 4) and np.allclose(task.eigvals, [0.5, 1 / 3, 1 / 6])
    assert model.dims == (3, 2, 2) and cfg.method == "sgd"
