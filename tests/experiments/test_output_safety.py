"""Output folders own only what fastattn wrote (issue 37 failures 2-6): no file outside the
manifest is deleted or replaced, no symlink is followed out of --out, an overwrite cut short
leaves the old result whole, "finished" means every file as written, modes and folder kinds are
checked before any work. The figure is He 2025's E8 with its flows cut to t = 1 and a blank plot
(seconds)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fastattn import experiments, plots
from fastattn.cli import main
from fastattn.experiments import batch, registry
from fastattn.experiments.recipe import RunSpec
from fastattn.outputs import MANIFEST, Output, OutputError

NAME = "he2025-e8"


def _one_error_line(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"fastattn {command}: error: "), err
    return lines[0]


@pytest.fixture
def e8(monkeypatch):
    """He 2025 E8, cheap: flows to t = 1, a 1x1 blank figure."""
    from fastattn.experiments.he2025 import e8

    def short(quick: bool) -> list[RunSpec]:
        return [dataclasses.replace(s, train=dataclasses.replace(s.train, t_end=1.0))
                for s in e8.runs(quick)]

    def blank(runs, summary):
        from matplotlib.figure import Figure

        return Figure(figsize=(1, 1))

    monkeypatch.setattr(e8, "RECIPE", dataclasses.replace(e8.RECIPE, runs=short, plot=blank))
    monkeypatch.setattr(batch, "select", lambda papers=(), names=(): [NAME])
    return e8


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (not the manifest and its lock) and its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith(MANIFEST)}


def _precious(tmp_path: Path) -> Path:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    (precious / "pic.png").write_bytes(b"not a figure of fastattn")
    return precious


# ----------------------------------------------------------------------------- failure 2
def test_a_symlinked_figure_folder_is_refused_and_its_target_untouched(e8, tmp_path, capsys):
    precious, out = _precious(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / NAME).symlink_to(precious, target_is_directory=True)
    assert main(["reproduce", NAME, "--quick", "--out", str(out)]) == 2
    assert "is a symlink" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert main(["reproduce", NAME, "--quick", "--out", str(out), "--overwrite"]) == 2
    assert "is a symlink" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert _files(precious) == {"pic.png": b"not a figure of fastattn",
                                "thesis.tex": b"years of work"}
    assert not (out / f"{NAME}.json").exists()


def test_files_fastattn_did_not_write_in_a_figure_folder_are_left_alone(e8, tmp_path, capsys):
    registry.reproduce(NAME, tmp_path, quick=True)
    (tmp_path / NAME / "notes.txt").write_text("mine")
    (Output(tmp_path, "reproduce").remove(tmp_path / f"{NAME}.json"))   # the figure is unfinished
    registry.reproduce(NAME, tmp_path, quick=True)                      # resume: runs reused
    assert (tmp_path / NAME / "notes.txt").read_text() == "mine"
    # --overwrite would have to delete it with the old records: refused before any work
    before = _files(tmp_path)
    assert main(["reproduce", NAME, "--quick", "--out", str(tmp_path), "--overwrite"]) == 2
    line = _one_error_line(capsys.readouterr().err, "reproduce")
    assert "notes.txt" in line and "did not write" in line
    assert _files(tmp_path) == before


def test_a_run_record_fastattn_did_not_write_is_not_replaced(e8, tmp_path, capsys):
    label = e8.runs(True)[0].label
    (tmp_path / NAME).mkdir()
    (tmp_path / NAME / f"{label}.json").write_text('{"the user": "wrote this"}')
    assert main(["reproduce", NAME, "--quick", "--out", str(tmp_path)]) == 2
    assert "did not write" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert json.loads((tmp_path / NAME / f"{label}.json").read_text()) == {"the user": "wrote this"}


# ----------------------------------------------------------------------------- failure 3
def test_a_png_symlink_is_never_written_through(e8, tmp_path, capsys):
    precious, out = _precious(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / f"{NAME}.png").symlink_to(precious / "pic.png")
    for extra in ([], ["--overwrite"]):
        assert main(["reproduce", NAME, "--quick", "--out", str(out), *extra]) == 2
        assert "symlink" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert (precious / "pic.png").read_bytes() == b"not a figure of fastattn"
    # the helper every command draws with (train's run.png, the sweep's plot_KIND.png)
    fig, _ = plots.plt.subplots()
    with pytest.raises(OutputError, match="symlink"):
        plots.save(fig, out / f"{NAME}.png")
    assert (precious / "pic.png").read_bytes() == b"not a figure of fastattn"


def test_train_refuses_a_run_png_symlink_before_training(tmp_path, capsys):
    precious = _precious(tmp_path)
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.png").symlink_to(precious / "pic.png")
    assert main(["train", "--method", "sgd", "--lr", "0.01", "--steps", "3", "--batch-size", "4",
                 "--out", str(out), "--quiet"]) == 2
    assert "symlink" in _one_error_line(capsys.readouterr().err, "train")
    assert (precious / "pic.png").read_bytes() == b"not a figure of fastattn"
    assert not (out / "run.json").exists()


@pytest.mark.parametrize("resume", [False, True])
def test_train_neither_replaces_nor_deletes_a_checkpoint_it_did_not_write(tmp_path, capsys, resume):
    """OUT/NAME.ckpt is written every few steps and deleted when the run ends: a user's file of
    that name was both (found by an audit), and a symlink there was written through."""
    precious = _precious(tmp_path)
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.ckpt").write_bytes(b"my own checkpoint")
    (out / "link.ckpt").symlink_to(precious / "pic.png")
    train = ["train", "--method", "sgd", "--lr", "0.01", "--steps", "12", "--batch-size", "4",
             "--checkpoint-every-steps", "3", "--out", str(out), "--quiet"]
    assert main([*train, *(["--resume"] if resume else [])]) == 2
    line = _one_error_line(capsys.readouterr().err, "train")
    assert ("not a checkpoint" if resume else "was not written by fastattn") in line, line
    assert main([*train, "--name", "link", *(["--resume"] if resume else [])]) == 2
    assert "symlink" in _one_error_line(capsys.readouterr().err, "train")
    assert (out / "run.ckpt").read_bytes() == b"my own checkpoint"
    assert (precious / "pic.png").read_bytes() == b"not a figure of fastattn"
    assert not (out / "run.json").exists() and not (out / "link.json").exists()
    # its own checkpoint: written, entered in the manifest, and deleted at the end
    assert main([*train, "--name", "mine"]) == 0
    assert not (out / "mine.ckpt").exists() and (out / "run.ckpt").exists()


def test_a_failed_png_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "a.png"
    fig, _ = plots.plt.subplots()
    plots.save(fig, path)
    old = path.read_bytes()

    def disk_full(self, fh, **kw):
        fh.write(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plots.plt.Figure, "savefig", disk_full)
    fig, _ = plots.plt.subplots()
    with pytest.raises(OSError, match="No space"):
        plots.save(fig, path)
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["a.png"]          # no temporary left


def test_finished_means_every_file_as_written(e8, tmp_path):
    registry.reproduce(NAME, tmp_path, quick=True)
    assert batch.finished(tmp_path, NAME, quick=True)
    png = tmp_path / f"{NAME}.png"
    whole = png.read_bytes()
    png.write_bytes(whole[: len(whole) // 2])                 # truncated (disk full, ulimit -f)
    assert not batch.finished(tmp_path, NAME, quick=True)
    png.write_bytes(whole[:-1] + bytes([whole[-1] ^ 1]))      # same size, one bit changed
    assert not batch.finished(tmp_path, NAME, quick=True)
    png.write_bytes(whole)
    assert batch.finished(tmp_path, NAME, quick=True)
    record = next((tmp_path / NAME).glob("*.npz"))
    record.unlink()                                           # a run record gone
    assert not batch.finished(tmp_path, NAME, quick=True)


# ----------------------------------------------------------------------------- failure 4
def test_an_interrupted_overwrite_leaves_the_old_result_whole(e8, tmp_path, monkeypatch):
    registry.reproduce(NAME, tmp_path, quick=True)
    before = _files(tmp_path)
    real, calls = registry._train, []

    def ctrl_c_in_second(specs, models, *rest):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(specs, models, *rest)

    monkeypatch.setattr(registry, "_train", ctrl_c_in_second)
    with pytest.raises(KeyboardInterrupt):
        registry.reproduce(NAME, tmp_path, quick=True, resume=False)
    assert _files(tmp_path) == before                       # nothing of the attempt left
    assert not (tmp_path / f".{NAME}.new").exists()
    assert batch.finished(tmp_path, NAME, quick=True)
    # the next overwrite completes, and leaves nothing of the attempt beside the figure
    monkeypatch.setattr(registry, "_train", real)
    registry.reproduce(NAME, tmp_path, quick=True, resume=False)
    assert batch.finished(tmp_path, NAME, quick=True)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(MANIFEST)) == \
        [NAME, f"{NAME}.json", f"{NAME}.png", "runs"]


# ----------------------------------------------------------------------------- failure 5
def test_quick_and_full_never_mix_for_single_figures_and_batches(e8, tmp_path, monkeypatch,
                                                                 capsys):
    out = tmp_path / "D"
    assert main(["reproduce", "--paper", "he2025", "--quick", "--out", str(out)]) == 0
    capsys.readouterr()
    for module in (registry, experiments):
        monkeypatch.setattr(module, "reproduce", lambda *a, **k: pytest.fail("worked before checking"))
    # another figure, full settings, into the quick folder
    assert main(["reproduce", "sander2024-fig1", "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err, "reproduce")
    assert "quick" in line and "--overwrite" in line
    # a full figure in a folder whose batch manifest says quick: a quick batch refuses to mix
    Output(out, "reproduce").write(out / "sander2024-fig1.json", lambda fh: fh.write(
        json.dumps({"name": "sander2024-fig1", "quick": False, "summary": {}, "options": {}})), "w")
    monkeypatch.setattr(batch, "select", lambda papers=(), names=(): [NAME, "sander2024-fig1"])
    assert main(["reproduce", "--paper", "sander2024", "--quick", "--out", str(out)]) == 2
    assert "holds full, quick figures" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert json.loads((out / "sander2024-fig1.json").read_text())["quick"] is False


# ----------------------------------------------------------------------------- failure 6
def test_reproduce_refuses_a_sweep_folder_and_a_sweep_a_reproduce_folder(e8, tmp_path,
                                                                          monkeypatch, capsys):
    pytest.importorskip("pyarrow")
    from fastattn.sweep import run_sweep

    sweep = tmp_path / "sweep"
    run_sweep({"model": "separate", "dim": 2, "heads": 2, "t_end": 1.0}, sweep, workers=0,
              progress=False)
    before = _files(sweep)
    for args in (["--all", "--overwrite"], ["--paper", "he2025", "--overwrite"], [NAME]):
        assert main(["reproduce", *args, "--quick", "--out", str(sweep)]) == 2
        assert "is a sweep folder" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert _files(sweep) == before
    figures = tmp_path / "figures"
    registry.reproduce(NAME, figures, quick=True)
    code = main(["sweep", "--model", "separate", "--dim", "2", "--heads", "2", "--t-end", "1",
                 "--workers", "0", "--out", str(figures), "--quiet"])
    assert code == 2
    assert "is a `fastattn reproduce` folder" in _one_error_line(capsys.readouterr().err, "sweep")


def test_train_and_reproduce_refuse_each_others_folders(e8, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "--method", "sgd", "--lr", "0.01", "--steps", "3", "--batch-size", "4",
                 "--out", str(run), "--quiet"]) == 0
    capsys.readouterr()
    before = _files(run)
    assert main(["reproduce", NAME, "--quick", "--out", str(run)]) == 2
    assert "is a `fastattn train` folder" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert _files(run) == before
    figures = tmp_path / "figures"
    registry.reproduce(NAME, figures, quick=True)
    assert main(["train", "--method", "sgd", "--lr", "0.01", "--steps", "3", "--batch-size", "4",
                 "--out", str(figures), "--quiet"]) == 2
    assert "is a `fastattn reproduce` folder" in _one_error_line(capsys.readouterr().err, "train")


def test_the_report_never_replaces_a_page_fastattn_did_not_write(e8, tmp_path, capsys):
    precious = _precious(tmp_path)
    out = tmp_path / "out"
    registry.reproduce(NAME, out, quick=True)
    (out / "index.html").symlink_to(precious / "thesis.tex")
    assert main(["report", str(out)]) == 2
    assert "index.html is a symlink" in _one_error_line(capsys.readouterr().err, "report")
    assert (out / "index.html").is_symlink() and not (out / "claims.json").exists()
    (out / "index.html").unlink()
    (out / "index.html").write_text("the user's page")
    assert main(["report", str(out)]) == 2
    assert "index.html was not written by fastattn" in _one_error_line(capsys.readouterr().err,
                                                                       "report")
    assert (out / "index.html").read_text() == "the user's page"
    (out / "index.html").unlink()
    assert main(["report", str(out)]) == 0
    assert main(["report", str(out)]) == 0                # its own page: replaced
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_the_report_refuses_a_folder_reproduce_did_not_write_before_writing(e8, tmp_path,
                                                                            capsys):
    """A report marks its folder as reproduce's: written into a sweep's or a run's folder, it
    would lock out the command that owns it (a sweep resuming). Checked, with --docs, first."""
    pytest.importorskip("pyarrow")
    from fastattn.sweep import run_sweep

    sweep, run, empty = tmp_path / "sweep", tmp_path / "run", tmp_path / "empty"
    run_sweep({"model": "separate", "dim": 2, "heads": 2, "t_end": 1.0}, sweep, workers=0,
              progress=False)
    assert main(["train", "--method", "sgd", "--lr", "0.01", "--steps", "3", "--batch-size", "4",
                 "--out", str(run), "--quiet"]) == 0
    empty.mkdir()
    for folder, said in ((sweep, "is a sweep folder"), (run, "is a `fastattn train` folder"),
                         (empty, "holds no figure written by fastattn reproduce")):
        before = _files(folder)
        assert main(["report", str(folder)]) == 2
        assert said in _one_error_line(capsys.readouterr().err, "report")
        assert _files(folder) == before
    figures = tmp_path / "figures"
    registry.reproduce(NAME, figures, quick=True)
    before = _files(figures)
    (tmp_path / "afile").write_text("")
    for docs in (tmp_path / "absent", tmp_path / "afile"):
        assert main(["report", str(figures), "--docs", str(docs)]) == 2
        assert f"--docs {docs}: not a writable folder" in _one_error_line(
            capsys.readouterr().err, "report")
    assert _files(figures) == before


def test_train_overwrite_replaces_only_its_own_record(tmp_path, capsys):
    args = ["train", "--method", "sgd", "--lr", "0.01", "--steps", "3", "--batch-size", "4",
            "--out", str(tmp_path), "--quiet"]
    (tmp_path / "run.json").write_text('{"the user": "wrote this"}')
    assert main([*args, "--overwrite"]) == 2
    assert "run.json was not written by fastattn" in _one_error_line(capsys.readouterr().err,
                                                                     "train")
    assert json.loads((tmp_path / "run.json").read_text()) == {"the user": "wrote this"}
    (tmp_path / "run.json").unlink()
    assert main(args) == 0 and main([*args, "--overwrite"]) == 0      # its own: replaced
    assert Output(tmp_path, "train").complete([tmp_path / f"run{x}" for x in (".json", ".npz",
                                                                             ".png")])


def test_the_write_checks_touch_no_existing_file(tmp_path, e8):
    """The probes that check --out is writable use a fresh name: a user's file (or link) with the
    old fixed probe names is neither followed nor removed."""
    from fastattn.sweep import run_sweep

    precious = _precious(tmp_path)
    names = (".reproduce.probe", ".run.probe", ".write-test")
    for kind in ("figures", "run", "sweep"):
        (tmp_path / kind).mkdir()
        for name in names:
            (tmp_path / kind / name).symlink_to(precious / "thesis.tex")
    registry.reproduce(NAME, tmp_path / "figures", quick=True)
    batch.prepare(tmp_path / "figures", quick=True, overwrite=False)
    assert main(["train", "--method", "sgd", "--lr", "0.01", "--steps", "3", "--batch-size", "4",
                 "--out", str(tmp_path / "run"), "--quiet"]) == 0
    pytest.importorskip("pyarrow")
    run_sweep({"model": "separate", "dim": 2, "heads": 2, "t_end": 1.0}, tmp_path / "sweep",
              workers=0, progress=False)
    for kind in ("figures", "run", "sweep"):
        assert all((tmp_path / kind / name).is_symlink() for name in names)
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_a_failed_overwrite_leaves_the_old_result_whole(e8, tmp_path, monkeypatch):
    registry.reproduce(NAME, tmp_path, quick=True)
    before = _files(tmp_path)

    def broken(runs, summary):
        raise RuntimeError("the plot failed")

    monkeypatch.setattr(e8, "RECIPE", dataclasses.replace(e8.RECIPE, plot=broken))
    with pytest.raises(RuntimeError, match="the plot failed"):
        registry.reproduce(NAME, tmp_path, quick=True, resume=False)
    assert _files(tmp_path) == before and batch.finished(tmp_path, NAME, quick=True)
