import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fastattn.cli import main


def test_info_reports_the_core_and_backends(capsys):
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["core"]["loaded"] is True and report["core"]["version"]
    assert report["versions"]["torch"]
    assert report["backends"]["torch-reference"]["available"] is True
    assert set(report["backends"]) >= {"triton-cuda", "triton-interpreter", "torch-reference"}
    assert "linear_regression" in report["registries"]["tasks"]
    assert "separate" in report["registries"]["models"]


def test_train_command_writes_a_record_and_a_plot(tmp_path, capsys, monkeypatch):
    """The record, and a plot with the pair's theory overlaid: Zhang et al.'s Eq. 19 levels
    L(M_0..M_D) of this spectrum and N, as dashed lines at those losses."""
    from fastattn import plots
    from fastattn.theory import zhang2025

    drawn, save = [], plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path, *a: drawn.append(fig) or save(fig, path, *a))
    args = ["train", "--model", "separate", "--dim", "4", "--heads", "5", "--rank", "1",
            "--context", "31", "--spectrum", "0.4,0.3,0.2,0.1", "--init-scale", "1e-2",
            "--method", "flow", "--t-end", "2000", "--out", str(tmp_path), "--quiet"]
    assert main(args) == 0
    assert "flow: status=t_end" in capsys.readouterr().out     # the flow stops at its time
    data = np.load(tmp_path / "run.npz")
    assert {"time", "loss"} <= set(data.files)
    assert np.isclose(data["time"][-1], 2000)
    assert (tmp_path / "run.png").stat().st_size > 10_000
    (ax,) = drawn[0].axes
    levels = [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"]
    np.testing.assert_allclose(levels, zhang2025.fixed_point_losses(np.array([0.4, 0.3, 0.2, 0.1]),
                                                                     1 / 31), rtol=1e-12)
    assert any("theory" in t.get_text() for t in ax.get_legend().get_texts())
    assert json.loads((tmp_path / "run.json").read_text())["config"]["task"]["spectrum"] == \
        [0.4, 0.3, 0.2, 0.1]
    args = ["train", "--method", "gd", "--lr", "0.02", "--steps", "100", "--out", str(tmp_path),
            "--name", "gd", "--quiet"]
    assert main(args) == 0
    assert np.load(tmp_path / "gd.npz")["step"][-1] == 100
    assert "gd: status=steps" in capsys.readouterr().out       # GD stops at its step count
    assert json.loads((tmp_path / "gd.json").read_text())["status"] == "steps"


def test_train_help_all_shows_each_family_its_pairs_and_their_paper_defaults(capsys):
    from fastattn.models import MODELS
    from fastattn.tasks import TASKS

    with pytest.raises(SystemExit):
        main(["train", "--help-all"])
    out = capsys.readouterr().out
    for kind in TASKS:
        assert f"\ntask {kind} (" in out
    for kind in MODELS:             # Musat's four included
        assert f"\nmodel {kind} (" in out
    separate = out.index("\nmodel separate (")
    assert separate < out.index("--rank RANK: key/query rank R (default: 1)", separate)
    # He et al.'s pair shows He et al.'s setup, Zhang et al.'s pair Zhang et al.'s
    he = out[out.index("\nmodel multihead_softmax ("):]
    assert "--dim 5 --context 40" in " ".join(he[:he.index("\n\n")].split())
    assert "--w-var 1/D --noise 0.1" in " ".join(he[:he.index("\n\n")].split())
    assert "--context-dist orthogonal: spec sander2024 Fig. 3 orthogonal" in " ".join(out.split())


def test_every_option_family_is_registered():
    from fastattn.configs import MODEL_CARDS, TASK_CARDS, all_options
    from fastattn.models import MODELS
    from fastattn.tasks import TASKS

    assert set(TASK_CARDS) == set(TASKS)
    assert set(MODEL_CARDS) == set(MODELS)
    for opt in all_options():
        assert set(opt.families) <= set(TASKS if opt.target == "task" else MODELS), opt.flag


def test_train_task_option_and_family_errors(tmp_path, capsys):
    base = ["train", "--method", "gd", "--lr", "0.02", "--steps", "3", "--quiet"]
    out = str(tmp_path / "out")
    assert main([*base, "--task", "ar", "--out", out]) == 2
    assert re.search(r"--task 'ar' is unknown.*linear_regression", capsys.readouterr().err)
    assert main([*base, "--model", "merged", "--rank", "2", "--out", out]) == 2
    assert "--rank does not apply to --model merged (it applies to --model separate, " \
        "softmax_separate)" in capsys.readouterr().err
    assert main([*base, "--dim", "4", "--rank", "9", "--out", out]) == 2    # issue 41: it ran
    assert "--rank 9 must be at most --dim 4" in _one_error_line(capsys.readouterr().err, "train")
    assert main([*base, "--scale", "2", "--out", out]) == 2
    assert "--scale does not apply to --model separate (it applies to --model softmax_merged" in \
        capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main([*base, "--model", "merged_full", "--out", out]) == 2       # no exact objective
    assert "--method gd trains the exact population loss" in capsys.readouterr().err
    args = ["train", "--model", "merged_full", "--method", "sgd", "--lr", "0.02", "--steps", "3",
            "--dataset-size", "8", "--quiet", "--out", out]
    assert main(args) == 0
    meta = json.loads((tmp_path / "out" / "run.json").read_text())
    assert meta["config"]["task"]["kind"] == "linear_regression"
    assert meta["config"]["model"]["kind"] == "merged_full"
    assert meta["meta"]["preset"]["name"] == "zhang2025"


def test_a_wrong_pair_is_refused_in_one_line_before_anything_is_written(tmp_path, capsys):
    """Issue 28 item 1: the sampled pair (autoregressive, separate) used to fail inside the trainer
    ("'SeparateKQ' object has no attribute 'predict'") after creating --out."""
    out = tmp_path / "out"
    assert main(["train", "--task", "autoregressive", "--model", "separate", "--method", "sgd",
                 "--out", str(out)]) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "--model separate does not pair with --task autoregressive; models for autoregressive: " \
        "diag, pe_only, aug, aug_layers, aug_transformer, non_aug, eq6" in err
    assert not out.exists()


def test_a_bad_value_is_one_line_in_the_option_s_words(tmp_path, capsys):
    """Issue 28 item 8: `--dim abc` printed 35 lines of usage."""
    assert main(["train", "--dim", "abc", "--out", str(tmp_path / "o")]) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert err == "fastattn train: error: --dim must be an integer; got 'abc'\n"
    assert main(["train", "--nosuch", "1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err == "fastattn train: error: unknown option --nosuch; fastattn train --help lists the " \
        "options\n"
    assert main(["train", "--context-dist", "sphere", "--task", "autoregressive", "--model", "diag",
                 "--out", str(tmp_path / "o")]) == 2
    assert "--context-dist must be one of unitary | orthogonal | haar | positional; got 'sphere'" in \
        _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


def test_build_run_takes_option_values_and_ignores_other_families():
    from fastattn.cli_options import build_run

    spec = {"task": {"kind": "linear_regression", "dim": 3, "context": [2, 4],
                     "spectrum": "linear", "vocab": 9},
            "model": {"kind": "separate", "heads": 2, "rank": 2, "scale": 1.0},
            "train": {"method": "sgd", "lr": 0.1, "steps": 2}}
    task, model, cfg = build_run(spec)
    assert task.context == (2, 4) and np.allclose(task.eigvals, [0.5, 1 / 3, 1 / 6])
    assert (model.config.dim, model.config.heads, model.config.rank) == (3, 2, 2) and cfg.method == "sgd"


def _one_error_line(err: str, command: str = "train") -> str:
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"fastattn {command}: error: "), err
    return err


def test_bad_input_is_one_line_exit_2_and_the_traceback_only_with_debug(tmp_path, capsys):
    args = ["train", "--dim", "0", "--method", "gd", "--lr", "0.1", "--steps", "2",
            "--out", str(tmp_path)]
    assert main(args) == 2
    assert "dim" in _one_error_line(capsys.readouterr().err)
    assert main(["--debug", *args]) == 2
    assert "Traceback" in capsys.readouterr().err
    assert main([*args, "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_cli_errors_use_the_cli_option_names(tmp_path, capsys):
    assert main(["train", "--t-end", "-1", "--out", str(tmp_path)]) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "--t-end" in err and "t_end" not in err
    assert main(["train", "--dim", "0", "--out", str(tmp_path)]) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert err.startswith("fastattn train: error: --dim must be"), err
    assert main(["train", "--method", "sgd", "--lr", "0.1", "--steps", "3", "--batch-size", "0",
                 "--out", str(tmp_path)]) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "--batch-size" in err and "batch_size" not in err


def test_out_is_checked_before_any_training(tmp_path, capsys, monkeypatch):
    import fastattn.training

    monkeypatch.setattr(fastattn.training, "train", lambda *a, **k: pytest.fail("trained"))
    a_file = tmp_path / "file"
    a_file.write_text("")
    base = ["train", "--method", "gd", "--lr", "0.1", "--steps", "2"]
    assert main([*base, "--out", str(a_file)]) == 2
    assert "--out" in _one_error_line(capsys.readouterr().err)
    assert main([*base, "--out", str(a_file / "sub")]) == 2
    assert "--out" in _one_error_line(capsys.readouterr().err)
    for name in ("", "a/b", ".."):
        assert main([*base, "--out", str(tmp_path), "--name", name]) == 2
        assert "--name" in _one_error_line(capsys.readouterr().err)
    assert not list(tmp_path.glob("*.json"))


def test_a_second_run_into_the_same_name_is_refused_unless_overwrite(tmp_path, capsys):
    args = ["train", "--method", "gd", "--lr", "0.1", "--steps", "2", "--out", str(tmp_path),
            "--quiet"]
    assert main(args) == 0
    first = (tmp_path / "run.json").read_text()
    assert main([*args, "--steps", "3"]) == 2
    assert "--overwrite" in _one_error_line(capsys.readouterr().err)
    assert (tmp_path / "run.json").read_text() == first
    assert main([*args, "--steps", "3", "--overwrite"]) == 0
    assert json.loads((tmp_path / "run.json").read_text())["config"]["train"]["steps"] == 3


def test_sampled_runs_report_the_exact_population_loss(tmp_path, capsys):
    args = ["train", "--method", "sgd", "--lr", "0.05", "--steps", "20", "--batch-size", "16",
            "--out", str(tmp_path), "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    population = np.load(tmp_path / "run.npz")["test_loss/population"][-1]
    assert f"final population loss={population:.6g}" in out


def test_reproduce_without_a_name_says_so_and_lists_in_numeric_order(capsys):
    assert main(["reproduce"]) == 2
    assert "--list" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert main(["reproduce", "--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert "zhang2025-fig3" in names and "zhang2025-fig11" in names
    assert names.index("zhang2025-fig3") < names.index("zhang2025-fig11")


def test_sigterm_ends_a_run_like_ctrl_c_and_resume_finishes_it(tmp_path, capsys):
    """The child announces step 5 of its run (and slows down, so that it is still running);
    SIGTERM then stops it with status interrupted, its record and checkpoint kept, one line on
    stderr and exit 130 (issue 41: it exited 0); --resume continues from the checkpoint to the
    end."""
    script = (
        "import sys, time\n"
        "from fastattn.tasks import LinearRegression\n"
        "real = LinearRegression.sample\n"
        "def sample(self, n, step, **kw):\n"
        "    if step == 5:\n"
        "        print('running', flush=True)\n"
        "    if step >= 5:\n"
        "        time.sleep(0.02)\n"
        "    return real(self, n, step, **kw)\n"
        "LinearRegression.sample = sample\n"
        "from fastattn.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    args = ["train", "--method", "sgd", "--lr", "0.01", "--steps", "200", "--batch-size", "8",
            "--n-records", "20", "--n-snapshots", "5", "--out", str(tmp_path), "--quiet"]
    root = str(Path(__file__).resolve().parents[1])       # this checkout's fastattn, not another
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, *filter(None, [os.environ.get(
        "PYTHONPATH")])]))
    proc = subprocess.Popen([sys.executable, "-c", script, *args, "--checkpoint-every", "0"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline() == "running\n", proc.communicate()
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.count("\n") == 1 and err.startswith("fastattn train: interrupted;"), err
    assert "status=interrupted" in out
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "interrupted"
    stopped = np.load(tmp_path / "run.npz")["step"][-1]
    assert 5 <= stopped < 200 and (tmp_path / "run.ckpt").exists()
    assert main([*args, "--resume", "--checkpoint-every", "1000"]) == 0
    assert "status=steps" in capsys.readouterr().out
    assert np.load(tmp_path / "run.npz")["step"][-1] == 200
    assert not (tmp_path / "run.ckpt").exists()


def test_the_help_example_shows_every_drop(tmp_path, capsys):
    """Issue 28 item 8: the `train --help` example (`--t-end 2000`) stopped as the first drop began.
    Its horizon now reaches Eq. 19's last level (all four drops)."""
    from fastattn.cli import TRAIN_HELP
    from fastattn.tasks import LinearRegression
    from fastattn.theory import zhang2025 as theory

    example = " ".join(TRAIN_HELP.split("fastattn train ", 1)[1].split("\n", 2)[:2]).replace("\\", "")
    argv = ["train", *example.split()]
    argv[argv.index("DIR")] = str(tmp_path)
    assert main([*argv, "--quiet"]) == 0
    levels = theory.fixed_point_losses(LinearRegression(4, spectrum=(0.4, 0.3, 0.2, 0.1)).eigvals,
                                       LinearRegression(4).inv_context_mean())
    data = np.load(tmp_path / "run.npz")
    assert data["loss"][-1] <= 1.01 * levels[-1]
    assert data["loss"][np.searchsorted(data["time"], 2000)] > levels[1]   # the old horizon: no drop yet


def test_plot_titles_show_only_the_family_s_fields():
    """Issue 28 item 8: titles like "diag: H=10, R=20" showed fields meaningless for the family."""
    from fastattn.cli import _title
    from fastattn.configs import resolve

    assert _title(resolve("linear_regression", "multihead_softmax")) == \
        "linear_regression: D=5, N=40; multihead_softmax: H=2"
    assert _title(resolve("autoregressive", "diag")) == "autoregressive: D=10, N=20; diag: H=10"
    assert _title(resolve("linear_regression", "separate")) == \
        "linear_regression: D=4, N=31; separate: H=5, R=1"
    assert _title(resolve("wishart_tasks", "linear_transformer")) == \
        "wishart_tasks: D=4, N=32; linear_transformer"


@pytest.mark.parametrize("where", ["parse", "report"])
def test_ctrl_c_anywhere_in_train_exits_130_with_one_line(where, tmp_path, monkeypatch, capsys):
    """Issue 41: Ctrl-C gave exit 0 inside a run, 130 between seeds and once a traceback. Here it
    lands while the parser is built (importing the trainers) or while seed 0's record is written,
    before seed 1 starts: one line, exit 130."""
    import fastattn.cli as cli

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "build_parser" if where == "parse" else "_report_run", interrupt)
    args = ["train", "--method", "gd", "--lr", "0.02", "--steps", "5", "--seeds", "0..1",
            "--out", str(tmp_path), "--quiet"]
    assert main(args) == 130
    err = capsys.readouterr().err
    assert err == "fastattn train: interrupted\n"
    assert not list(tmp_path.glob("run-seed1*"))
