"""Issue 37 failures 7 and 10 for `train`, `kernels` and `report`: bad input ends before any work in
one line `fastattn <cmd>: error: …` and exit 2 (no traceback, no file written); --threads above the
cores is capped with a one-line warning."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from fastattn.cli import main

BASE = ["train", "--task", "linear_regression", "--model", "separate", "--dim", "2", "--heads", "2",
        "--n-records", "20", "--quiet"]
#: a subprocess imports this checkout's sources, as the tests do
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
FLOW = [*BASE, "--t-end", "1"]


def _one_error_line(capsys, command: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"fastattn {command}: error: "), err
    assert "Traceback" not in err
    return err


class Reached(BaseException):
    """Raised where a command would start its work: input that gets there was accepted."""


@pytest.mark.parametrize(("args", "says"), [
    (["--seeds=-3"], "--seeds takes seeds >= 0"),                            # failure 10
    (["--init-seed=-3"], "--init-seed must be an integer >= 0"),
    (["--target-loss", "nan"], "--target-loss must be finite"),
    (["--init-scale", "inf"], "--init-scale must be finite"),
    (["--lr", "0.1", "--steps", "5"], "--lr, --steps do not apply to --method flow"),
    (["--method", "adam", "--lr", "1e-3", "--steps", "5", "--integrator", "rk4"],
     "--t-end, --integrator do not apply to --method adam; drop them, or give --method flow"),
    (["--context", "1..1000000"], "of at most 100000 lengths"),               # failure 7
    (["--context", "1..100000000"], "of at most 100000 lengths"),
    # one option that silently replaced another
    (["--lr", "0.1,0.2", "--lrs", "0.3"], "--lrs 0.3 and --lr 0.1,0.2 both give the learning rates"),
    (["--seeds", "0,1", "--init-seed", "3"], "--seeds 0,1 sets --init-seed of each run"),
    (["--seeds", "0,1", "--data-seed", "3"], "--seeds 0,1 sets --data-seed of each run"),
    (["--cov-rho", "0.5", "--spectrum", "0.4,0.3"], "--cov-rho gives the input covariance"),
    (["--dt", "0.5"], "--dt is the step of --integrator rk4"),
    (["--integrator", "rk4"], "--integrator rk4 needs --dt STEP, its fixed step (e.g. --dt 0.01)"),
    (["--target-loss", "-1"], "--target-loss must be a finite number >= 0"),
    (["--grad-tol", "-1"], "--grad-tol must be a finite number > 0"),
    (["--heads", "D"], "expressions of D and N are for fastattn sweep"),
    (["--seeds", "3..1"], "--seeds 3..1 is an empty range: LO..HI needs LO <= HI (e.g. 1..3)"),
    (["--log", f"tensorboard:{__file__}"], "test_cli_input.py is not a folder; give a writable"),
    (["--log", "tensorboard:/proc/tb"], "--log tensorboard:/proc/tb: /proc/tb cannot be written"),
])
def test_bad_train_input_is_one_line_before_any_file(tmp_path, capsys, args, says):
    out = tmp_path / "out"
    assert main([*FLOW, *args, "--out", str(out)]) == 2
    assert says in _one_error_line(capsys, "train")
    assert not out.exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--method", "adam", "--lr", "1e-3", "--steps", "5", "--weight-decay", "0.1"], None),
    (["--method", "sgd", "--lr", "1e-3", "--steps", "5", "--weight-decay", "0.1"],
     "--weight-decay does not apply to --method sgd; drop it, or give --method adam"),
    (["--lr", "1e-3,nan", "--method", "adam", "--steps", "5"], "--lr takes learning rates > 0"),
])
def test_sampled_options_are_checked_against_the_method(tmp_path, capsys, monkeypatch, args, says):
    from fastattn import cli

    def reached(*_):
        raise Reached

    monkeypatch.setattr(cli, "check_output", reached)
    if says is None:                                 # accepted: it gets to the output folder
        with pytest.raises(Reached):
            main([*BASE, *args, "--out", str(tmp_path / "o")])
        return
    assert main([*BASE, *args, "--out", str(tmp_path / "o")]) == 2
    assert says in _one_error_line(capsys, "train")


@pytest.mark.parametrize(("args", "says"), [
    (["--method", "gd", "--steps", "5"], "--method gd needs lr: give --lr 0.01"),
    (["--method", "sgd"], "--method sgd needs lr and steps: give --lr 0.01 and --steps 1000"),
])
def test_a_config_error_names_flags_not_fields(tmp_path, capsys, args, says):
    assert main([*BASE, *args, "--out", str(tmp_path / "out")]) == 2
    assert _one_error_line(capsys, "train").endswith(says)


def test_an_empty_out_is_refused_not_the_current_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*FLOW, "--out", ""]) == 2
    assert "--out '' names no folder" in _one_error_line(capsys, "train")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("seeds", ["0..1000000", ",".join(map(str, range(10_001)))])
def test_a_long_seed_list_is_refused_unless_yes_before_any_run_is_built(tmp_path, capsys,
                                                                       monkeypatch, seeds):
    """`train --seeds 0-1000000` built a million runs silently for minutes (failure 7)."""
    import fastattn.cli_options

    def reached(*_):
        raise Reached

    monkeypatch.setattr(fastattn.cli_options, "build_run", reached)
    assert main([*FLOW, "--seeds", seeds, "--out", str(tmp_path / "o")]) == 2
    err = _one_error_line(capsys, "train")
    assert "above the limit of 10000" in err and "--yes" in err
    with pytest.raises(Reached):                   # --yes: the runs are built
        main([*FLOW, "--seeds", seeds, "--yes", "--out", str(tmp_path / "o")])


def test_seeds_times_lrs_counts_against_the_limit(tmp_path, capsys):
    lrs = ",".join(f"{1e-3 * (k + 1):g}" for k in range(200))
    assert main([*BASE, "--method", "adam", "--steps", "5", "--seeds", "0..99", "--lr", lrs,
                 "--out", str(tmp_path / "o")]) == 2
    assert "100 × 200 = 20000 runs" in _one_error_line(capsys, "train")


def test_threads_above_the_cores_are_capped_with_a_warning():
    from fastattn.training import TrainConfig

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with pytest.warns(RuntimeWarning, match=rf"threads=100000 is more than the {cores} cores"):
        cfg = TrainConfig(t_end=1.0, threads=100_000)
    assert cfg.threads == cores
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TrainConfig(t_end=1.0, threads=1).threads == 1


def test_train_threads_100000_warns_in_one_line_and_exits_0(tmp_path):
    """It segfaulted (exit 139) after writing the record (failure 7). A subprocess: a crash must
    not take the test session with it."""
    out = tmp_path / "o"
    proc = subprocess.run([sys.executable, "-m", "fastattn.cli", *FLOW, "--threads", "100000",
                           "--out", str(out)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastattn train: warning: threads=100000"), lines
    assert (out / "run.json").exists()


def test_an_unknown_kernel_is_an_error_not_an_empty_report(capsys):
    pytest.importorskip("triton")
    assert main(["kernels", "--kernel", "nope"]) == 2
    assert "--kernel nope is no kernel" in _one_error_line(capsys, "kernels")


@pytest.mark.parametrize(("argv", "says"), [
    (["kernels", "--jobs", "-3"], "--jobs must be at least 1; got -3"),
    (["reproduce", "zhang2025-fig8", "--quick", "--workers", "-1"],      # one figure ran anyway
     "--workers must be at least 1; got -1"),
    (["reproduce", "--paper", "zhang2025", "--quick", "--workers", "0"],
     "--workers must be at least 1; got 0"),
])
def test_a_count_below_one_is_refused_on_every_path(tmp_path, capsys, monkeypatch, argv, says):
    pytest.importorskip("triton")
    from fastattn.experiments import registry

    def reached(*args, **kwargs):
        raise Reached

    monkeypatch.setattr(registry, "reproduce", reached)
    assert main([*argv, *(["--out", str(tmp_path / "o")] if argv[0] == "reproduce" else [])]) == 2
    assert says in _one_error_line(capsys, argv[0])
    assert not (tmp_path / "o").exists()


def test_a_truncated_figure_json_is_named(tmp_path, capsys):
    """"Unterminated string starting at: line 7" named no file (failure 10)."""
    from fastattn.experiments.registry import FIGURES

    name = next(iter(FIGURES))
    bad = tmp_path / f"{name}.json"
    bad.write_text('{\n "title": "fig",\n "meta": {"quick": tru')
    assert main(["report", str(tmp_path)]) == 2
    err = _one_error_line(capsys, "report")
    assert str(bad) in err and "not valid JSON" in err
