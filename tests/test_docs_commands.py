"""Every `fastattn train` and `fastattn sweep` command quoted in docs/ and README.md (code blocks and
inline code) parses with today's command line without a deprecation line: no unknown option, no old
name (--time, --lrs …), no old list form (train --seeds 0-4, sweep --seeds K). Parsed only: nothing runs."""

import argparse
import contextlib
import io
import itertools
import re
import shlex
import warnings
from pathlib import Path

import pytest

from fastattn.cli import _lr_list, build_parser
from fastattn.configs.options import run_list
from fastattn.sweep.grid import Grid

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
COMMAND = re.compile(r"fastattn (train|sweep)(?=\s|$)([^#`]*)")
#: words of a usage line or a table cell, not values: `[--KEY VALUE ...]`, `…`, `gd\|flow`
PLACEHOLDER = re.compile(r"^\[|\.\.\.\]?$|…|\\\|")


def quoted(text: str) -> list[tuple[str, str]]:
    """(command, its arguments' text) of every quoted `fastattn train|sweep …`: each code block
    line (backslash continuations joined), then each inline code span (line breaks as spaces)."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    found = [m for b in blocks for line in b.replace("\\\n", " ").splitlines()
             for m in COMMAND.findall(line)]
    inline = re.sub(r"```.*?```", "", text, flags=re.S)
    found += [m for span in re.findall(r"`([^`]+)`", inline)
              for m in COMMAND.findall(span.replace("\n", " "))]
    return found


def problem(command: str, rest: str) -> str | None:
    """Why `fastattn COMMAND REST` is not today's command line, or None: an unknown option, or a
    deprecation line (an old option name, `--lrs`, a `--seeds` list of the old form). A value the
    command refuses is no problem here: the pages quote bad input on purpose (docs/sweeps.md)."""
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    words = [w for w in words if not PLACEHOLDER.search(w)]
    sub = build_parser(command)._subparsers._group_actions[0].choices[command]
    flags = [w.split("=", 1)[0] for w in words if w.startswith("--")]
    unknown = [f for f in flags if f not in sub._option_string_actions]
    if unknown:
        return f"unknown option {unknown[0]}"

    def value(flag: str) -> str | None:
        given = [w.split("=", 1)[1] if "=" in w else nxt
                 for w, nxt in itertools.pairwise([*words, None]) if w.split("=", 1)[0] == flag]
        return given[-1] if given else None

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                with contextlib.suppress(SystemExit, ValueError):   # a bad value; --help
                    sub.parse_known_args(words)
            seeds = value("--seeds")
            if seeds is not None and re.fullmatch(r"[\d.,-]+", seeds):
                run_list(seeds) if command == "train" else Grid({}, seeds)
            if command == "train":
                _lr_list(argparse.Namespace(lr=value("--lr"), lrs=value("--lrs")))
        except FutureWarning as note:
            return str(note)
    return None


def test_the_check_can_fail():
    assert "--time is deprecated" in problem("train", "--task linear_regression --time 10")
    assert "--lrs" in problem("train", "--method adam --lrs 1e-3,1e-2 --out DIR")
    assert "--seeds 0-4 is deprecated" in problem("train", "--seeds 0-4 --out DIR")
    assert "--init is deprecated" in problem("sweep", "--dim 4,8 --init 1e-2 --out DIR")
    assert problem("sweep", "--dim 4,8 --heds 2 --out DIR") == "unknown option --heds"
    assert "--seeds 2 (a count) is deprecated" in problem("sweep", "--dim 4,8 --seeds 2 --out DIR")
    assert problem("train", "--task T --model M [--KEY VALUE ...] --out DIR") is None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_quoted_command_parses_without_a_deprecation(page):
    bad = [f"fastattn {c}{r}: {why}" for c, r in quoted(page.read_text())
           if (why := problem(c, r)) is not None]
    assert not bad, "\n".join(bad)


def test_the_pages_quote_commands():
    assert sum(len(quoted(p.read_text())) for p in PAGES) >= 40
