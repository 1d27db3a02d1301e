"""Names a user types: "did you mean" (the known name closest to a mistyped one, for one-line
errors; difflib), and the one-line note of a deprecated name that still works."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable

#: difflib's similarity ratio a known name needs to be offered: `--heds` → `--heads` (0.91),
#: `transfomer` → `transformer` (0.95); `--nosuch` offers nothing
CUTOFF = 0.7


def closest(word: str, known: Iterable[str]) -> str | None:
    """The name in `known` most like `word` (ratio >= CUTOFF), or None."""
    match = difflib.get_close_matches(word, list(known), n=1, cutoff=CUTOFF)
    return match[0] if match else None


def deprecated(old: str, new: str, why: str = "", stacklevel: int = 3) -> None:
    """Say once per use, in one line, that `old` still works but `new` is its name now (a
    FutureWarning: shown by default; `fastattn` prints it as `fastattn <cmd>: warning: …`).
    `stacklevel`: the frame the line names (3: the caller of the function that calls this)."""
    warnings.warn(f"{old} is deprecated; write {new}{why} (the old form still works for now)",
                  FutureWarning, stacklevel=stacklevel)
