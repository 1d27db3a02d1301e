"""Start-up cost: `import fastattn` and `fastattn --help` load only what they use.

Each check runs in a fresh interpreter (a subprocess), since this test process has imported
everything already."""

import json
import subprocess
import sys

import pytest


def _modules_after(code: str) -> list[str]:
    """The modules loaded by a fresh interpreter after running `code` (SystemExit included)."""
    probe = ("import atexit, json, sys\n"
             "atexit.register(lambda: print('MODULES=' + json.dumps(sorted(sys.modules))))\n"
             + code)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=300).stdout
    line = next(x for x in out.splitlines() if x.startswith("MODULES="))
    return json.loads(line.removeprefix("MODULES="))


def _heavy(mods: list[str]) -> list[str]:
    return [m for m in mods if m.split(".")[0] in ("torch", "triton", "scipy", "matplotlib")]


def test_import_fastattn_loads_no_theory_experiment_or_torch():
    mods = _modules_after("import fastattn\nassert fastattn.__version__")
    assert not [m for m in mods if m.startswith(("fastattn.theory", "fastattn.experiments"))]
    assert not _heavy(mods)


def test_public_names_load_on_first_use():
    mods = _modules_after("import fastattn\nprint(fastattn.train, fastattn.TrainConfig)")
    assert "fastattn.training" in mods and "torch" in mods
    assert not [m for m in mods if m.startswith("fastattn.experiments")]


@pytest.mark.parametrize("argv", [["--help"], [], ["bogus"]])
def test_top_level_help_and_usage_errors_import_no_torch(argv):
    mods = _modules_after(f"from fastattn.cli import main\nmain({argv!r})")
    assert not _heavy(mods), _heavy(mods)


def test_a_first_flow_run_and_its_record_import_no_triton(tmp_path):
    """The run record lists versions from package metadata: no `import triton` (most of a short
    flow's first call, before)."""
    mods = _modules_after(
        "import fastattn\n"
        "from fastattn.models import SeparateKQ\n"
        "from fastattn.tasks import LinearRegression\n"
        "traj = fastattn.train(SeparateKQ(dim=3, heads=2, rank=1), LinearRegression(dim=3), "
        "method='flow', t_end=10.0)\n"
        f"traj.save({str(tmp_path / 'run')!r})\n")
    assert "triton" not in mods
    meta = json.loads((tmp_path / "run.json").read_text())["meta"]
    assert meta["versions"]["torch"] and meta["core_loaded"] is True


@pytest.mark.parametrize("command", ["info", "train", "reproduce", "sweep", "plot"])
def test_each_command_builds_alone_with_its_options(command):
    """Only the chosen command's parser is built, whole (sweep and plot come from one function)."""
    from fastattn.cli import build_parser

    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command")
    assert any(a.option_strings == ["--debug"] for a in sub.choices[command]._actions)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args([command, "--help"])
    assert stop.value.code == 0


def test_every_listed_command_builds_with_its_listed_help():
    """The one-line help shown before a command is built is the one its parser declares."""
    from fastattn.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    listed = {c.dest: c.help for c in sub._choices_actions}
    assert set(sub.choices) == set(COMMANDS)
    assert listed == {name: help_line for name, (help_line, _) in COMMANDS.items()}


def test_import_fails_with_a_clear_message_without_the_compiled_core():
    """The compiled core is a hard requirement: no fallback, an ImportError that says how to build it."""
    code = ("import sys\n"
            "class NoCore:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.startswith('fastattn._core') and name != 'fastattn._core_loader':\n"
            "            raise ImportError('hidden by the test')\n"
            "sys.meta_path.insert(0, NoCore())\n"
            "import fastattn\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError") and "fastattn._core" in last and "pip install -e ." in last
