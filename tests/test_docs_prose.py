"""Every section of docs/*.md holds at most one screen of prose (issue 41 item 4): at most
`MAX_PROSE` lines that are neither a table row nor in a code block; facts past that go into tables
or sub-sections."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: lines of prose a section may hold: one screen
MAX_PROSE = 25


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
        assert lines <= MAX_PROSE, (f"{page.name} {heading!r}: {lines} lines of prose, over "
                                    f"{MAX_PROSE}; put its facts in a table or sub-sections")
