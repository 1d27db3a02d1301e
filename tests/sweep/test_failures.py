"""Transient and permanent failures of sweep runs (issue 37 failure 9): a run that failed because
the machine did (an OSError: disk full, permission denied) is run again on resume, without
--retry-failed; a bad setting is refused before any work and never becomes a row."""

from __future__ import annotations

import errno
import json

import pytest

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from fastattn.cli import main
from fastattn.sweep import run_sweep, store, worker
from fastattn.sweep.horizon import Horizon

POINT = {"model": "separate", "dim": 2, "heads": 2, "t_end": 1.0}


def test_a_run_that_failed_with_an_os_error_runs_again_on_resume(tmp_path, monkeypatch):
    real, calls = worker.flow_trajectories, []

    def disk_full(*args, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kw)

    monkeypatch.setattr(worker, "flow_trajectories", disk_full)
    first = run_sweep(POINT, tmp_path, workers=0, progress=False)
    assert first["status"].tolist() == ["error"] and "No space left" in first["error"][0]
    again = run_sweep(POINT, tmp_path, workers=0, progress=False)        # no retry_failed
    assert len(calls) == 2 and again["status"].tolist() == ["t_end"]


def test_a_run_that_failed_for_good_waits_for_retry_failed(tmp_path, monkeypatch):
    def broken(*args, **kw):
        raise RuntimeError("a bug in the run")

    monkeypatch.setattr(worker, "flow_trajectories", broken)
    run_sweep(POINT, tmp_path, workers=0, progress=False)
    assert store.finished_keys(tmp_path) == store.finished_keys(tmp_path, include_failed=True)
    assert len(store.finished_keys(tmp_path)) == 1
    assert not store.finished_keys(tmp_path, include_failed=False)


@pytest.mark.parametrize("setting", [{"max_evals": -5}, {"max_evals": 0}, {"n_records": 0},
                                     {"converge_rel": float("nan")}, {"horizon_factor": -1.0},
                                     {"max_run_seconds": 0.0}])
def test_a_bad_horizon_is_refused_before_any_work(setting):
    name = next(iter(setting)).replace("_", "-")
    with pytest.raises(ValueError, match=f"--{name} must be"):
        Horizon(**setting)


def test_max_evals_below_one_is_one_line_and_no_row(tmp_path, capsys):
    out = tmp_path / "sweep"
    code = main(["sweep", "--model", "separate", "--dim", "2", "--heads", "2", "--t-end", "1",
                 "--workers", "0", "--max-evals=-5", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--max-evals must be" in err and len(err.strip().splitlines()) == 1
    assert not (out / store.RUNS).exists() or not list((out / store.RUNS).glob("*.json"))
    assert not out.exists() or json.dumps(sorted(p.name for p in out.iterdir())) == "[]"
