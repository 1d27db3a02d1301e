"""docs/python.md's examples run, in order, as one script (in a temporary folder: they write files)."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def test_every_example_runs(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    exec(compile("\n".join(blocks), str(DOC), "exec"), {"__name__": "docs_python"})
