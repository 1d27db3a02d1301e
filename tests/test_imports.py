"""Every module of the package imports on its own, first, in a fresh interpreter: an import
cycle (a module importing one that is still half-initialised) hides when another module happens
to be imported before it, as in the suite's own process (`fastattn.training.checkpoint` importing
`fastattn.outputs` broke `fastattn plot` while every test passed)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: in one child process: a first forked child imports every module and reports the other
#: libraries they import; those are imported once, in the parent (the per-module children then
#: import fastattn's modules only: seconds in all, not a torch import each), and a forked child
#: per module imports only that module, and what it imports, of fastattn
SCRIPT = r'''
import importlib, os, sys

def imported_by(names):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        for name in names:
            try:
                importlib.import_module(name)
            except BaseException:
                pass
        os.write(w, "\n".join(m for m in sys.modules if not m.startswith("fastattn.")).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        found = fh.read().split()
    os.waitpid(pid, 0)
    return found

for lib in sorted(imported_by(sys.argv[1:])):
    try:
        importlib.import_module(lib)
    except BaseException:
        pass
failed = 0
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:      # an optional dependency that is not installed
            os._exit(0 if exc.name and not exc.name.startswith("fastattn") else 1)
        except BaseException as exc:
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            os._exit(1)
        os._exit(0)
    failed += os.waitpid(pid, 0)[1] != 0
sys.exit(1 if failed else 0)
'''


def modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "fastattn").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="forks a child per module")
def test_every_module_imports_first_in_a_fresh_interpreter():
    done = subprocess.run([sys.executable, "-c", SCRIPT, *modules()], cwd=ROOT,
                          capture_output=True, text=True, timeout=280,
                          env={**__import__("os").environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-4000:]
