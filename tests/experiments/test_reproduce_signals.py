"""`fastattn reproduce` under SIGINT and SIGTERM (issue 37 failure 8): one line, the batch manifest
updated (the figure in flight marked "interrupted"), exit 128 + the signal's number, the runs that
finished kept; a Ctrl-C that something swallowed still stops the batch after the figure in
flight. The child runs He 2025's E8 cut to flows of t = 1, pausing after its first run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECOND = "sander2024-fig2"          # closed form: no runs

SCRIPT = """
import dataclasses, sys, time
from fastattn.cli import main
from fastattn.experiments import batch, registry
from fastattn.experiments.he2025 import e8

def short(quick):
    return [dataclasses.replace(s, train=dataclasses.replace(s.train, t_end=1.0))
            for s in e8.runs(quick)]

def blank(runs, summary):
    from matplotlib.figure import Figure
    return Figure(figsize=(1, 1))

e8.RECIPE = dataclasses.replace(e8.RECIPE, runs=short, plot=blank)
real, swallow, paused = registry._train, sys.argv.pop(1) == "swallow", []

def pausing(specs, models, *rest):
    out = real(specs, models, *rest)
    if not paused:               # after the first run: the signal lands here
        paused.append(1)
        try:
            print("ran", flush=True)
            time.sleep(600)
        except KeyboardInterrupt:
            if not swallow:
                raise            # like an "Exception ignored in ...": the figure goes on
    return out

registry._train = pausing
batch.select = lambda papers=(), names=(): ["he2025-e8", "SECOND"]
sys.exit(main(sys.argv[1:]))
""".replace("SECOND", SECOND)


def _start(out: Path, swallow: bool, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, "swallow" if swallow else "raise",
                             "reproduce", *args, "--quick", "--out", str(out)],
                            cwd=out.parent, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ran\n", proc.communicate()
    return proc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_batch_with_one_line_and_the_manifest_updated(tmp_path, signum):
    out = tmp_path / "D"
    proc = _start(out, False, "--all")
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"fastattn reproduce: interrupted ({signal.Signals(signum).name})")
    figures = json.loads((out / "reproduce.json").read_text())["figures"]
    assert figures == {"he2025-e8": {"status": "interrupted", "wall_time": 0.0, "error": ""}}
    assert not (out / "he2025-e8.json").exists() and list((out / "he2025-e8").glob("*.npz"))


def test_sigterm_stops_one_figure_with_one_line(tmp_path):
    out = tmp_path / "D"
    proc = _start(out, False, "he2025-e8")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert err.count("\n") == 1 and err.startswith("fastattn reproduce: interrupted (SIGTERM)"), err
    assert not (out / "he2025-e8.json").exists()


def test_a_swallowed_ctrl_c_still_stops_the_batch(tmp_path):
    out = tmp_path / "D"
    proc = _start(out, True, "--all")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    done, stop = err.splitlines()        # e8's progress line (piped too, issue 41), then one line
    assert done.startswith("figure 1 of 2: he2025-e8 done") and "Traceback" not in err, err
    assert "interrupted (SIGINT)" in stop, err
    figures = json.loads((out / "reproduce.json").read_text())["figures"]
    assert figures["he2025-e8"]["status"] == "done" and SECOND not in figures
    assert not (out / f"{SECOND}.json").exists()
