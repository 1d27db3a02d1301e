"""Run records: provenance computed once per process, files any JSON reader accepts, clear errors."""

import subprocess

from fastattn.training import records


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

