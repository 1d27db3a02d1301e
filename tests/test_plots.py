"""fastattn.plots and the modules that draw leave the caller's matplotlib backend alone (a notebook
keeps inline plots); the CLI selects Agg for itself (issue 38 item 5)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"} | env
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=environ, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_importing_the_plotting_modules_keeps_the_callers_backend():
    code = ("import matplotlib\nmatplotlib.use('pdf')\n"
            "import fastattn.plots, fastattn.sweep.plots, fastattn.experiments.registry\n"
            "import matplotlib.pyplot\nprint(matplotlib.get_backend())")
    assert _run(code) == "pdf"


def test_the_cli_selects_agg_for_itself_unless_the_user_chose_a_backend():
    code = ("import os\nfrom fastattn.cli import main\n"
            "try:\n    main(['bogus-command'])\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('MPLBACKEND'))")
    assert _run(code) == "Agg"
    assert _run(code, MPLBACKEND="pdf") == "pdf"
