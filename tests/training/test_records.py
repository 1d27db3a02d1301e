"""Run records: provenance computed once per process, files any JSON reader accepts, clear errors."""

import json
import os
import re
import stat
import subprocess

import numpy as np
import pytest

from fastattn.training import Trajectory, records
from fastattn.training.records import RecordError


def test_git_revision_runs_git_at_most_once_per_process(monkeypatch):
    calls = []
    real = subprocess.run

    def counting(*args, **kwargs):
        if args and args[0][:1] == ["git"]:
            calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(records.subprocess, "run", counting)
    records.git_revision.cache_clear()
    first = [records.environment()["git_revision"] for _ in range(3)]
    assert len(calls) <= 1 and len(set(first)) == 1


def _git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
                          ).stdout.strip()


def test_head_commit_reads_what_git_rev_parse_prints(tmp_path):
    """Loose and packed refs, a detached HEAD, a worktree (`.git` is a file there), and a layout
    it does not know (None: `git_revision` then asks git)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for k in range(2):
        (repo / "f").write_text(str(k))
        _git(repo, "add", "f")
        _git(repo, "commit", "-qm", f"c{k}")
    assert records.head_commit(repo / ".git") == _git(repo, "rev-parse", "HEAD")
    _git(repo, "pack-refs", "--all")
    assert not (repo / ".git/refs/heads/main").exists()
    assert records.head_commit(repo / ".git") == _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "HEAD~1")
    assert records.head_commit(repo / ".git") == _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), "HEAD~1")
    assert (tmp_path / "wt/.git").is_file()
    assert records.head_commit(tmp_path / "wt/.git") == _git(tmp_path / "wt", "rev-parse", "HEAD")
    assert records.head_commit(tmp_path / "wt/.git") != records.head_commit(repo / ".git")
    (repo / ".git/HEAD").write_text("ref: refs/heads/nowhere\n")
    assert records.head_commit(repo / ".git") is None


def test_git_revision_is_the_checkout_head_here():
    """The tests run from fastattn's checkout: the record's revision is its HEAD."""
    from pathlib import Path

    root = Path(records.__file__).resolve().parents[2]
    if not (root / ".git").exists():
        pytest.skip(f"fastattn runs from an installed copy ({root}), not a checkout")
    records.git_revision.cache_clear()
    assert records.git_revision() == _git(root, "rev-parse", "HEAD")


def _record(tmp_path):
    from fastattn.models import SeparateKQ
    from fastattn.tasks import LinearRegression
    from fastattn.training import train

    task = LinearRegression(2, context=4, spectrum=[0.6, 0.4], rotate=False)
    traj = train(SeparateKQ(2, 1, init_seed=1), task, method="sgd", lr=0.05, steps=5, batch_size=4,
                 test_size=0)
    traj.test_loss["nan_curve"] = np.full(traj.loss.shape, np.nan)
    traj.wall_time = float("nan")
    return traj, traj.save(tmp_path / "run")


@pytest.mark.parametrize("damage", ["truncate_json", "empty_json", "truncate_npz", "empty_npz",
                                    "no_status", "not_an_object"])
def test_a_damaged_record_raises_one_error_naming_the_file(damage, tmp_path):
    _, path = _record(tmp_path)
    npz = path.with_suffix(".npz")
    text = path.read_text()
    if damage == "truncate_json":
        path.write_text(text[:50])
    elif damage == "empty_json":
        path.write_text("")
    elif damage == "truncate_npz":
        npz.write_bytes(npz.read_bytes()[:100])
    elif damage == "empty_npz":
        npz.write_bytes(b"")
    elif damage == "no_status":
        meta = json.loads(text)
        del meta["status"]
        path.write_text(json.dumps(meta))
    else:
        path.write_text("[1, 2]")
    damaged = npz.name if "npz" in damage else path.name
    with pytest.raises(RecordError, match=re.escape(damaged)):
        Trajectory.load(path)


def test_loading_an_out_folder_names_the_records_in_it(tmp_path):
    """`Trajectory.load(DIR)` of a `train --out DIR` looked for DIR.json beside it."""
    _, path = _record(tmp_path)
    with pytest.raises(FileNotFoundError, match=f"is a folder; give one of its run records: "
                                                f"{re.escape(str(path.with_suffix('')))}$"):
        Trajectory.load(tmp_path)


def test_records_are_strict_json_with_null_for_nan_and_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        _, path = _record(tmp_path)
    finally:
        os.umask(old)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    meta = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert meta["wall_time"] is None
    for p in (path, path.with_suffix(".npz")):
        assert stat.S_IMODE(p.stat().st_mode) == 0o644
    back = Trajectory.load(path)
    assert np.isnan(back.test_loss["nan_curve"]).all()         # arrays keep their NaN (npz)


def test_to_jsonable_gives_strict_json_for_figures_and_rows():
    """Figure JSON and sweep rows go through to_jsonable: NaN and ±inf become null."""
    doc = records.to_jsonable({"a": float("nan"), "b": np.array([1.0, np.inf, -np.inf]),
                               "c": np.float64("nan"), "d": (2, 3.5)})
    assert json.loads(json.dumps(doc, allow_nan=False)) == {"a": None, "b": [1.0, None, None],
                                                            "c": None, "d": [2, 3.5]}


def test_records_written_before_init_scheme_moved_still_load():
    """Run configs written by fastattn at e94bf92, when every model config had init_scheme
    (tests/training/data): they rebuild, a Zhang family keeps its scheme, the others drop the field
    (it never acted on them), and every TrainConfig field reads back as written; an unknown field
    is still refused."""
    import dataclasses
    from pathlib import Path

    from fastattn.models import config_from_dict
    from fastattn.training import rebuild_run

    old = json.loads((Path(__file__).parent / "data" / "records_e94bf92.json").read_text())
    kinds = []
    for config in old["configs"]:
        assert "init_scheme" in config["model"]
        task, model, train = rebuild_run(config)
        kinds.append(model.kind)
        now = dataclasses.asdict(model.config)
        assert {k: v for k, v in config["model"].items() if k in now} == now
        assert ("init_scheme" in now) == (model.kind == "merged")
        assert json.loads(json.dumps(dataclasses.asdict(train))) == config["train"]
        assert task.kind == config["task"]["kind"]
    assert kinds == ["diag", "merged", "linear_transformer"]
    assert old["configs"][1]["model"]["init_scheme"] == "code"
    with pytest.raises(ValueError, match=r"has no field\(s\) \['init_shceme'\]"):
        config_from_dict(old["configs"][0]["model"] | {"init_shceme": "paper"})
