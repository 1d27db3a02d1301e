"""Every section of docs/*.md holds at most one screen of prose (issue 41 item 4): at most
`MAX_PROSE` lines that are neither a table row nor in a code block; facts past that go into tables
or lists. The sections still longer are listed with their length, which may only shrink (a section
that falls within the limit must leave the list)."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: lines of prose a section may hold: one screen
MAX_PROSE = 25
#: (page, heading) → its prose lines now: the sections not yet shortened, none may grow
LONGER = {
    ("theory.md", "## 7. Adding an objective"): 45,
    ("reproduce.md", "### Planted bugs (`fastattn report WORK --mutations`, "
                     "`fastattn/experiments/mutations.py`)"): 31,
    ("reproduce.md", "## Measured (2026-11-25, this 2-core machine, one engineer on it)"): 31,
    ("reproduce.md", "### Where a number comes from (`source`, `where`, `quote`) and what a row "
                     "proves (`kind`)"): 28,
    ("benchmarks.md", "## `auto` against the fixed integrators"): 26,
}


def prose(text: str) -> dict[str, int]:
    """Heading → its lines of prose (not blank, not a table row, not an HTML comment such as a
    generated table's markers, not in a ``` block); the text before the first heading under ""."""
    out: dict[str, int] = {"": 0}
    heading, fenced = "", False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            heading = line
            out[heading] = 0
        elif not fenced and line.strip() and not line.lstrip().startswith(("|", "<!--")):
            out[heading] += 1
    return out


def test_the_count_can_fail():
    text = ("# page\n" + "word\n" * 26 + "```\n" + "code\n" * 40 + "```\n| a | b |\n<!-- end -->\n"
            "## next\nword\n")
    assert prose(text) == {"": 0, "# page": 26, "## next": 1}


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_every_section_is_at_most_a_screen_of_prose(page):
    for heading, lines in prose(page.read_text()).items():
        allowed = LONGER.get((page.name, heading))
        if allowed is None:
            assert lines <= MAX_PROSE, (f"{page.name} {heading!r}: {lines} lines of prose, over "
                                        f"{MAX_PROSE}; put its facts in a table or a list")
        else:
            assert MAX_PROSE < lines <= allowed, (
                f"{page.name} {heading!r}: {lines} lines of prose; it may not grow past {allowed}, "
                f"and within {MAX_PROSE} it leaves LONGER")


def test_every_listed_section_exists():
    for page, heading in LONGER:
        assert heading in prose((DOCS / page).read_text()), (page, heading)
