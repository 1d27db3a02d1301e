"""docs/python.md's examples run, in order, as one script (in a temporary folder: they write
files), and each prints the output the page shows under it (a `text` block; `...` as in
helpers.ellipsis_pattern)."""

import contextlib
import io
import re
from pathlib import Path

from helpers import ellipsis_pattern

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def examples(text: str) -> list[tuple[str, str]]:
    """(code, expected output) of every `python` block, each followed by its `text` block."""
    found = re.findall(r"```python\n(.*?)```\n(?:```text\n(.*?)```)?", text, re.S)
    missing = [code.splitlines()[0] for code, out in found if not out]
    assert not missing, f"docs/python.md: give these examples their output: {missing}"
    return found


def test_every_example_prints_what_the_page_shows(tmp_path, monkeypatch):
    found = examples(DOC.read_text())
    assert len(found) >= 6
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "docs_python"}
    for code, expected in found:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, str(DOC), "exec"), namespace)
        assert ellipsis_pattern(expected).fullmatch(printed.getvalue()), (
            f"{code}\nexpected:\n{expected}\ngot:\n{printed.getvalue()}")
