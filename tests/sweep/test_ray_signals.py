"""The Ray executor under SIGTERM and SIGINT (issue 37 failure 8): like the local sweep, one line,
exit 130, no row of an unfinished run and no `.inflight` marker left (Ray's own SIGTERM handler,
which ray.init installs, used to abort the driver with exit 134 and leave the markers)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("ray", reason="Ray is not installed (pip install 'fastattn[ray]')")

from fastattn.sweep import store
from fastattn.sweep.store import INFLIGHT

ROOT = Path(__file__).resolve().parents[2]
# flow runs that would take minutes (rk4, 1e8 steps; the sweep's cap of 5e6 evaluations and its
# theory's target loss lifted: with them a run ended in seconds, at times before the signal)
ENDLESS = ["--model", "separate", "--dim", "2,3", "--context", "8", "--heads", "2",
           "--integrator", "rk4", "--dt", "1e-4", "--t-end", "1e4", "--max-evals", "1000000000",
           "--target-loss", "0"]


def _default_sigint() -> None:
    """The sweep as a terminal starts it: Ctrl-C at its default. A suite run from a background
    shell (`pytest … &`) ignores SIGINT, children inherit that and Python keeps it ignored: the
    sweep then ran to its end and exited 0."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_ray_sweep_and_leaves_no_marker(tmp_path, signum):
    import time

    out = tmp_path / "s"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.Popen([sys.executable, "-m", "fastattn.cli", "sweep", *ENDLESS,
                             "--executor", "ray", "--workers", "2", "--out", str(out), "--quiet"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 240
    while len(list((out / INFLIGHT).glob("*"))) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    assert len(list((out / INFLIGHT).glob("*"))) == 2, "the runs never started"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err
    ray_log = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(INFO|WARNING) ")   # Ray's start-up
    lines = [line for line in err.splitlines() if line.strip() and not ray_log.match(line)]
    assert len(lines) == 1 and lines[0].startswith("fastattn sweep: interrupted"), err
    assert not list((out / INFLIGHT).glob("*"))
    assert not list((out / store.RUNS).glob("*.json"))
