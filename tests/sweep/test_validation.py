"""Issue 28 items 2, 3, 7, 8 for sweeps and plots: every grid point is checked before any run or
folder exists; --out is absolute before executors see it; progress counts this grid and the table
separately; `plot --out` without --kind; broken sweep files, unreadable tables and unwritable
folders say so in one line."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from fastattn.cli import main
from fastattn.sweep import GridError, plan, run_sweep, store
from fastattn.sweep.grid import Grid

TINY = ["--model", "separate", "--dim", "2", "--context", "8", "--heads", "2", "--records", "60",
        "--workers", "0", "--quiet"]


@pytest.mark.parametrize(("args", "says"), [
    (["--heads", "-1"], ("--heads -1", ": heads must be an integer >= 1")),   # not "math domain error"
    (["--model", "nosuch"], ("--model nosuch", "--model 'nosuch' is unknown")),
    (["--dim", "3", "--heads", "D/2"], ("--heads D/2", "gives 1.5 at D=3")),
    (["--method", "gd"], ("--method gd", "needs lr")),
    (["--rank", "2", "--model", "merged"], ("--rank applies to model separate",)),
])
@pytest.mark.parametrize("dry", [False, True])
def test_bad_grid_points_fail_before_any_folder_exists(tmp_path, capsys, args, says, dry):
    out = tmp_path / "sweep"
    argv = ["sweep", *TINY, *args, "--out", str(out)] + (["--dry-run"] if dry else [])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("fastattn sweep: error: ")
    assert all(part in err for part in says), err
    assert not out.exists()


def test_plan_names_the_first_bad_point_and_counts_the_others():
    with pytest.raises(GridError, match=r"--dim 3 --heads D/2: .*D=3.*\(and 1 more of the 4 runs\)"):
        plan(Grid({"dim": [2, 3, 4, 5], "heads": "D/2"}))


def test_relative_out_is_made_absolute_before_the_executors(tmp_path, monkeypatch):
    seen = {}
    from fastattn.sweep import api

    def fake_local(groups, out, horizon, workers, collect):
        seen["out"] = out

    monkeypatch.setattr(api, "run_local", fake_local)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError):          # nothing ran: no table
        run_sweep({"dim": 2, "heads": 2, "context": 8, "time": 1.0}, "rel", workers=0,
                  progress=False)
    assert os.path.isabs(seen["out"]) and seen["out"] == str(tmp_path / "rel")


def test_another_grid_in_the_same_folder_reports_both_counts(tmp_path, capsys):
    out = str(tmp_path / "s")
    assert main(["sweep", *TINY, "--time", "5", "--init", "1e-2,2e-2", "--out", out]) == 0
    capsys.readouterr()
    assert main(["sweep", *TINY, "--time", "5", "--out", out]) == 0
    line = capsys.readouterr().out.strip()
    assert "this grid: 1 of 1 runs finished" in line and "holds 2 runs" in line, line


def test_plot_honours_out_without_kind_and_fails_on_nothing_to_plot(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", *TINY, "--dim", "2,3", "--init", "1e-2,2e-2", "--time", "5",
                 "--out", str(out)]) == 0
    assert main(["plot", str(out), "--out", str(tmp_path / "fig.png")]) == 0
    assert (tmp_path / "fig_heatmap.png").stat().st_size > 5_000
    assert not list(out.glob("plot_*.png"))
    assert main(["plot", str(out), "--kind", "heatmap", "--out", str(tmp_path / "one.png")]) == 0
    assert (tmp_path / "one.png").exists()
    # an unreadable table with no row files to rebuild it from: non-zero, one line
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / store.TABLE).write_bytes(b"not parquet")
    capsys.readouterr()
    assert main(["plot", str(empty)]) == 2
    assert "unreadable" in capsys.readouterr().err


def test_a_broken_sweep_file_is_named(tmp_path, capsys):
    bad = tmp_path / "grid.toml"
    bad.write_text("dim = [4, 8\n")
    assert main(["sweep", str(bad), "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert f"sweep file {bad}:" in err and len(err.strip().splitlines()) == 1


def test_an_unwritable_folder_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "file"                  # a file where a folder should be (root or not)
    blocker.write_text("x")
    assert main(["sweep", *TINY, "--time", "5", "--out", str(blocker / "s")]) == 2
    err = capsys.readouterr().err
    assert "cannot write to the sweep folder" in err and ".tmp" not in err
    assert "choose a writable --out" in err


def test_reproduce_option_without_a_value_is_one_clear_line(tmp_path, capsys):
    assert main(["reproduce", "zhang2025-fig3", "--option", "heads", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "fastattn reproduce: error: --option 'heads' must be KEY=VALUE, e.g. heads=code"


def test_a_row_holds_only_its_familys_options():
    """Issue 27 item 2: Zhang's separate-KQ rows have `rank` but no induction or autoregressive
    option; a merged row has no `rank` (it is separate's); trainer options are everyone's."""
    from fastattn.sweep.options import family_options

    items = plan(Grid({"model": ["separate", "merged"], "dim": 2, "heads": 2, "time": 1.0}))
    cols = {it.spec["model"]["kind"]: set(it.columns) for it in items}
    assert {"rank", "dim", "context", "spectrum", "lr", "method"} <= cols["separate"]
    assert "rank" not in cols["merged"] and "heads" in cols["merged"]
    for absent in ("query", "vocab", "context_dist", "tasks", "mask", "d_model"):
        assert absent not in cols["separate"] | cols["merged"]
    induction = set(family_options("induction", "three_param"))
    assert {"query", "data", "mask"} <= induction and not {"spectrum", "rank", "noise"} & induction


def test_log_ticks_label_the_swept_values_only():
    from matplotlib.figure import Figure

    from fastattn.sweep.plots import log_ticks

    ax = Figure().subplots()
    n = [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
    ax.plot(n, n)
    ax.set(xscale="log")
    log_ticks(ax, "x", n)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == 8 and labels[0] == "4" and labels[-1] == "65536"
    assert all(t.get_text() == "" for t in ax.xaxis.get_minorticklabels())
