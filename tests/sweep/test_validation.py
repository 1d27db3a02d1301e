"""Issue 28 items 2, 3, 7, 8 for sweeps and plots: every grid point is checked before any run or
folder exists; --out is absolute before executors see it; progress counts this grid and the table
separately; `plot --out` without --kind; broken sweep files, unreadable tables and unwritable
folders say so in one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fastattn.population.stops import MEANING, Stop

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from fastattn.cli import main
from fastattn.sweep import GridError, plan, run_sweep, store
from fastattn.sweep.grid import Grid

TINY = ["--model", "separate", "--dim", "2", "--context", "8", "--heads", "2", "--n-records", "60",
        "--workers", "0", "--quiet"]


@pytest.mark.parametrize(("args", "says"), [
    (["--heads", "-1"], ("--heads -1", ": heads must be an integer >= 1")),   # not "math domain error"
    (["--model", "nosuch"], ("--model nosuch", "--model 'nosuch' is unknown")),
    (["--dim", "3", "--heads", "D/2"], ("--heads D/2", "gives 1.5 at D=3")),
    (["--method", "gd"], ("--method gd", "needs lr")),
    (["--rank", "2", "--model", "merged"], ("--rank applies to model separate",)),
    (["--spectrum", "0.6,0.4"], ("spectrum '0.6' has 1 values; dim=2 needs 2", "is 2 runs of one "
                                 "value each: write one list with '/' (--spectrum 0.6/0.4)")),
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


@pytest.mark.parametrize("dry", [False, True])
def test_an_out_that_cannot_be_a_sweep_folder_is_refused_by_a_dry_run_too(tmp_path, capsys, dry):
    """A dry run promises what a real run would do: it refuses the same --out, touching it not."""
    train = tmp_path / "train"
    (tmp_path / "file").write_text("mine")
    assert main(["train", *TINY[:8], "--t-end", "2", "--quiet", "--out", str(train)]) == 0
    before = sorted(p.name for p in train.iterdir())
    capsys.readouterr()
    for out, says in ((train, "is a `fastattn train` folder"), (tmp_path / "file", "is a file")):
        argv = ["sweep", *TINY, "--t-end", "2", "--out", str(out)] + (["--dry-run"] if dry else [])
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and says in err, err
    assert sorted(p.name for p in train.iterdir()) == before
    assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.parametrize("name", [store.SWEEP, store.TABLE])
def test_a_sweep_replaces_no_file_of_its_names_that_it_did_not_write(tmp_path, capsys, name):
    """A folder holding a user's sweep.json or results.parquet: refused in one line before any
    run, the file untouched; the sweep's own files are in the manifest, and a resume replaces
    them."""
    from fastattn.outputs import MANIFEST

    out = tmp_path / "mine"
    out.mkdir()
    (out / name).write_text("precious")
    assert main(["sweep", *TINY, "--t-end", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{out / name} was not written by fastattn" in err, err
    assert (out / name).read_text() == "precious" and not (out / store.RUNS).exists()
    ours = tmp_path / "ours"
    for t_end in ("2", "3"):                        # the second grid rewrites both files
        assert main(["sweep", *TINY, "--t-end", t_end, "--out", str(ours)]) == 0
    assert {store.SWEEP, store.TABLE} <= json.loads((ours / MANIFEST).read_text())["files"].keys()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="limits the child's address space (POSIX)")
@pytest.mark.parametrize("seeds", ["1..100000000", "100000000"])
def test_a_huge_seed_list_is_counted_not_built(tmp_path, seeds):
    """--seeds 1..10**8 is refused by its size before the list exists (it was built first: 4 GB,
    and CI's fuzz run was killed); in a child limited to 2 GiB of address space."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-m", "fastattn.cli", "sweep", *TINY, "--seeds", seeds,
                           "--out", str(tmp_path / "s"), "--dry-run"], preexec_fn=limit, env=env,
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in done.stderr.splitlines() if ": warning: " not in ln]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "the grid has 100000000 runs" in lines[0] and "give --yes" in lines[0], lines
    assert not (tmp_path / "s").exists()


def test_a_sweep_writes_nothing_through_a_symlinked_inflight_folder(tmp_path, capsys):
    """OUT/.inflight holds the running batches' markers, which a sweep writes and clears: a symlink
    there (to a folder of the user's) is refused before any run, the folder untouched."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.txt").write_text("years of work")
    out = tmp_path / "s"
    out.mkdir()
    (out / store.INFLIGHT).symlink_to(mine)
    assert main(["sweep", *TINY, "--t-end", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a symlink" in err, err
    assert [p.name for p in mine.iterdir()] == ["thesis.txt"]


def test_reading_another_commands_folder_as_a_sweep_writes_nothing_there(tmp_path):
    """read_table (so `fastattn plot`) on a folder another command wrote, holding rows: the table
    is built in memory and the folder keeps its kind and files (it once got a results.parquet and
    became a sweep folder, refused by its own command)."""
    from fastattn.outputs import MANIFEST, Output

    sweep = tmp_path / "s"
    assert main(["sweep", *TINY, "--t-end", "2", "--out", str(sweep)]) == 0
    other = tmp_path / "r"
    Output(other, "reproduce").claim()
    (other / store.RUNS).mkdir()
    for row in (sweep / store.RUNS).glob("*.json"):
        (other / store.RUNS / row.name).write_text(row.read_text())
    before = sorted(p.relative_to(other).as_posix() for p in other.rglob("*"))
    with pytest.warns(UserWarning, match="in memory only; nothing is written"):
        assert len(store.read_table(other)) == 1
    assert sorted(p.relative_to(other).as_posix() for p in other.rglob("*")) == before
    assert json.loads((other / MANIFEST).read_text())["kind"] == "reproduce"


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
        run_sweep({"dim": 2, "heads": 2, "context": 8, "t_end": 1.0}, "rel", workers=0,
                  progress=False)
    assert os.path.isabs(seen["out"]) and seen["out"] == str(tmp_path / "rel")


def test_another_grid_in_the_same_folder_reports_both_counts(tmp_path, capsys):
    out = str(tmp_path / "s")
    assert main(["sweep", *TINY, "--t-end", "5", "--init-scale", "1e-2,2e-2", "--out", out]) == 0
    capsys.readouterr()
    assert main(["sweep", *TINY, "--t-end", "5", "--out", out]) == 0
    line, *legend = capsys.readouterr().out.strip().splitlines()
    assert "this grid: 1 of 1 runs finished" in line and "holds 2 runs" in line, line
    status = line.split("finished (")[1].split("=")[0]         # e.g. t_end: the stop word
    assert legend == [f"  {status}: {MEANING[Stop(status)]}"]  # and what stopped those runs


def test_plot_honours_out_without_kind_and_fails_on_nothing_to_plot(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", *TINY, "--dim", "2,3", "--init-scale", "1e-2,2e-2", "--t-end", "5",
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


def test_plot_replaces_only_a_figure_fastattn_drew_and_checks_every_target_first(tmp_path, capsys):
    import matplotlib.pyplot as plt

    out = tmp_path / "s"
    assert main(["sweep", *TINY, "--dim", "2,3", "--init-scale", "1e-2,2e-2", "--t-end", "5",
                 "--out", str(out)]) == 0
    ours = tmp_path / "ours.png"
    assert main(["plot", str(out), "--kind", "heatmap", "--out", str(ours)]) == 0
    assert main(["plot", str(out), "--kind", "heatmap", "--out", str(ours)]) == 0   # ours: redrawn
    theirs = tmp_path / "theirs.png"
    fig = plt.figure()
    fig.savefig(theirs)                     # a matplotlib PNG, not fastattn's
    plt.close(fig)
    notes = tmp_path / "notes.png"
    notes.write_text("precious")
    (tmp_path / "folder.png").mkdir()
    (tmp_path / "link.png").symlink_to(ours)
    (tmp_path / "file").write_text("x")
    refused = {theirs: "is not a figure fastattn drew", notes: "is not a figure fastattn drew",
               tmp_path / "folder.png": "is not a figure fastattn drew",
               tmp_path / "link.png": "is a symlink",
               tmp_path / "file" / "x.png": "file is not a folder",
               Path("/proc/x.png"): "/proc is unwritable"}
    before = {p: p.read_bytes() for p in (theirs, notes, ours)}
    capsys.readouterr()
    for path, says in refused.items():
        assert main(["plot", str(out), "--kind", "heatmap", "--out", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and str(path) in err and len(err.splitlines()) == 1, err
    # several kinds: one refused target, and no plot is drawn at all
    (tmp_path / "fig_heatmap.png").write_text("mine")
    assert main(["plot", str(out), "--out", str(tmp_path / "fig.png")]) == 2
    assert not list(tmp_path.glob("fig_*[!p].png")) and not (tmp_path / "fig_dynamics.png").exists()
    assert {p: p.read_bytes() for p in before} == before
    assert (tmp_path / "fig_heatmap.png").read_text() == "mine"


def test_a_broken_sweep_file_is_named(tmp_path, capsys):
    bad = tmp_path / "grid.toml"
    bad.write_text("dim = [4, 8\n")
    assert main(["sweep", str(bad), "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert f"sweep file {bad}:" in err and len(err.strip().splitlines()) == 1


def test_an_unwritable_folder_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "file"                  # a file where a folder should be (root or not)
    blocker.write_text("x")
    assert main(["sweep", *TINY, "--t-end", "5", "--out", str(blocker / "s")]) == 2
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

    items = plan(Grid({"model": ["separate", "merged"], "dim": 2, "heads": 2, "t_end": 1.0}))
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


# ---------------------------------------------------------------- issue 37 failures 7 and 10
def status(argv: list[str]) -> int:
    """`main`'s exit status: returned, or argparse's SystemExit for a value it refused."""
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


@pytest.mark.parametrize(("args", "says"), [
    (["--heads", "D/0"], "argument --heads: expression 'D/0': division by zero"),   # failure 7
    (["--init-scale", "exp(1000)"], "argument --init-scale: expression 'exp(1000)': overflow"),
    (["--init-scale", "int(1e400)"], "a value (inf) above the limit 1e+12"),
    (["--init-scale", "2**65"], "an exponent (65) above the limit 64"),
    (["--init-scale", "nan"], "argument --init-scale: must be finite"),                        # failure 10
    (["--target-loss", "nan"], "argument --target-loss: must be finite"),
    (["--init-seed=-1"], "argument --init-seed: must be an integer >= 0 (a seed)"),
    (["--workers=-1"], "--workers must be an integer >= 0; got -1"),
    (["--max-evals=-5"], "--max-evals must be an integer >= 1; got -5"),
    (["--batch", "0"], "--batch must be an integer >= 1; got 0"),
    (["--lr", "0.1"], "--lr does not apply to --method flow"),
    (["--context", "1..1000000"], "of at most 100000 lengths"),
    (["--seeds", "0..999999"], "the grid has 1000000 runs (seed 1000000), above the limit of 10000"),
    (["--address", "10.0.0.1:6379"], "names a Ray cluster, but executor is 'local'"),
    (["--seeds", "3..1"], "--seeds 3..1 is an empty range"),
])
def test_bad_sweep_input_is_one_line_before_any_folder(tmp_path, capsys, args, says):
    out = tmp_path / "sweep"
    assert status(["sweep", *TINY, "--t-end", "5", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("fastattn sweep: error: "), err
    assert says in err and "Traceback" not in err, err
    assert not out.exists()


def test_a_ray_address_nothing_answers_at_is_one_line_before_any_folder(tmp_path, capsys):
    """Given an address, `ray.init` retried for minutes, printing Ray's logs, deaf to Ctrl-C."""
    import socket

    with socket.socket() as probe:          # a loopback port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "sweep"
    assert status(["sweep", *TINY, "--t-end", "5", "--executor", "ray",
                   "--address", f"127.0.0.1:{port}", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no Ray cluster answers there" in err, err
    assert not out.exists()


def test_a_million_point_grid_is_refused_unless_yes_and_stated_before_planning(
        tmp_path, capsys, monkeypatch):
    """A 10^6-point grid planned silently for over a minute (failure 7): its size is the product
    of the axes' lengths, refused above 10000 runs unless --yes, and stated before planning."""
    from fastattn.sweep import api
    from fastattn.sweep import cli as sweep_cli

    class Planned(BaseException):
        pass

    def planned(*_a, **_k):
        raise Planned

    monkeypatch.setattr(sweep_cli, "plan", planned)
    monkeypatch.setattr(api, "plan", planned)
    axes = ["--init-scale", ",".join(f"{1e-3 * (k + 1):g}" for k in range(1000)),
            "--rtol", ",".join(f"{1e-6 * (k + 1):g}" for k in range(1000))]
    out = tmp_path / "s"
    assert main(["sweep", *TINY, "--t-end", "5", *axes, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "the grid has 1000000 runs (init_scale 1000 × rtol 1000)" in err and "--yes" in err
    with pytest.raises(Planned):
        main(["sweep", *TINY, "--t-end", "5", *axes, "--yes", "--dry-run", "--out", str(out)])
    assert "planning 1000000 runs" in capsys.readouterr().err
    assert not out.exists()


def test_settings_from_a_sweep_file_are_checked_too(tmp_path, capsys):
    cfg = tmp_path / "grid.toml"
    cfg.write_text('dim = 2\nheads = 2\ncontext = 8\ntime = 5.0\n[sweep]\nworkers = -1\n')
    assert status(["sweep", str(cfg), "--out", str(tmp_path / "s")]) == 2
    assert "--workers must be an integer >= 0" in capsys.readouterr().err
    cfg.write_text('dim = 2\nheads = 2\ncontext = 8\ntime = 5.0\ninit = nan\n')
    assert status(["sweep", str(cfg), "--out", str(tmp_path / "s")]) == 2
    assert "--init-scale must be finite" in capsys.readouterr().err
    cfg.write_text('dim = 2\nheads = 2\ncontext = 8\nt_end = 5.0\n[sweep]\nworkerz = 2\n')
    assert status(["sweep", str(cfg), "--out", str(tmp_path / "s")]) == 2   # it was ignored
    assert "[sweep] workerz is no sweep setting; did you mean workers?" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_a_method_axis_keeps_each_methods_options():
    """--lr on a grid that sweeps flow and gd applies to gd: accepted; --integrator on a gd-only
    grid applies to none of its methods: refused."""
    items = plan(Grid({"dim": 2, "heads": 2, "context": 8, "method": ["flow", "gd"], "t_end": 1.0,
                       "lr": 0.01, "steps": 5}))
    assert {it.spec["train"]["method"] for it in items} == {"flow", "gd"}
    with pytest.raises(GridError, match="--integrator does not apply to --method gd"):
        plan(Grid({"dim": 2, "heads": 2, "context": 8, "method": "gd", "lr": 0.01, "steps": 5,
                   "integrator": "rk4"}))


def test_plot_refuses_an_empty_out(tmp_path, capsys):
    assert main(["plot", str(tmp_path), "--out", ""]) == 2
    assert "--out '' names no file" in capsys.readouterr().err


@pytest.mark.parametrize(("expr", "says"), [
    ("D/0", "division by zero"), ("exp(1000)", "overflow"), ("int(1e400)", "above the limit"),
    ("9**9**9", "an exponent (3.8742e+08) above the limit 64"), ("log(0)", "math domain error"),
    ("(-8)**(1/3)", "not a real number"), ("max()", "expression 'max()'"),
    ("__import__('os')", "use numbers"), ("D" * 300, "at most 200"), ("10**12*10", "above the limit"),
])
def test_the_expression_evaluator_is_bounded(expr, says):
    from fastattn.sweep.grid import evaluate

    with pytest.raises(ValueError) as info:
        evaluate(expr, {"D": 4, "N": 8})
    assert says in str(info.value) and len(str(info.value).splitlines()) == 1


def test_the_expression_evaluator_still_computes():
    from fastattn.sweep.grid import evaluate

    assert evaluate("2*D", {"D": 4, "N": 8}) == 8
    assert evaluate("1e-2*sqrt(D)", {"D": 4, "N": 8}) == pytest.approx(2e-2)
    assert evaluate("2**-3 + max(N, D)//3", {"D": 4, "N": 8}) == 0.125 + 2


def test_a_huge_power_exits_2_at_once_in_a_subprocess(tmp_path):
    """`--init-scale '9**9**9'` hung (failure 7): the exit path, as a user's shell sees it."""
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "fastattn.cli", "sweep", *TINY, "--t-end", "5",
                           "--init-scale", "9**9**9", "--out", str(tmp_path / "s")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "fastattn sweep: error: argument --init-scale: expression '9**9**9': an exponent (3.8742e+08) "
        "above the limit 64"]
    assert not (tmp_path / "s").exists()
