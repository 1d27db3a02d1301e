"""When to show progress bars."""

from __future__ import annotations

import sys


def interactive() -> bool:
    """Whether progress bars have a reader: a terminal on stderr, or a Jupyter kernel (whose stderr
    is a pipe; tqdm.auto draws a notebook bar there)."""
    if sys.stderr.isatty():
        return True
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"
