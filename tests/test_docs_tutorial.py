"""docs/tutorial.md's commands run, in order, in one fresh folder, and print what the page shows.

A `console` block holds commands (`$ ...`) each followed by its expected output; `...` is any text
within a line, or any number of lines on a line of its own (doctest's ELLIPSIS)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ellipsis_pattern as pattern

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "tutorial.md"
#: the checkout's command line, as the installed `fastattn` script runs it
CLI = "import sys; from fastattn.cli import main; sys.exit(main(sys.argv[1:]))"


def steps(text: str) -> list[tuple[str, str]]:
    """(command, expected output) of every `$ ` line of the page's console blocks, in order."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, expected = chunk.partition("\n")
            out.append((command, expected))
    return out


def argv(command: str) -> list[str]:
    words = shlex.split(command)
    if words[0] == "fastattn":
        return [sys.executable, "-c", CLI, *words[1:]]
    assert words[0] == "python", f"the tutorial runs fastattn and python only: {command}"
    return [sys.executable, *words[1:]]


def test_the_matcher_can_fail():
    assert pattern("a ... c\n...\nz\n").fullmatch("a b c\nx\ny\nz\n")
    assert pattern("a ... c\n...\nz\n").fullmatch("a b c\nz\n")
    assert not pattern("a ... c\nz\n").fullmatch("a b c\nx\nz\n")
    assert not pattern("0.135995\n").fullmatch("0.135996\n")


@pytest.mark.slow
def test_every_command_prints_what_the_page_shows(tmp_path):
    found = steps(DOC.read_text())
    assert len(found) >= 10
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    for command, expected in found:
        done = subprocess.run(argv(command), cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"$ {command}\n{output[-3000:]}"
        assert pattern(expected).fullmatch(output if output.endswith("\n") else output + "\n"), (
            f"$ {command}\nexpected:\n{expected}\ngot:\n{output[-3000:]}")
