"""Every text file's count of the properties is the code's: no "ten properties", "all ten" or
"(a) to (j)" left behind when a property is added.

The properties are read from the code (`conformance.checking.properties.PROPERTIES`, the name
every part of the suite imports them by), and every text file in the repository is searched
for a claim about all of them: a count ("eleven properties", "11 properties", "runs all
eleven") or a range from (a) ("(a) to (k)", "(a)-(k)", `"a" to "k"`). A count must be the
number of properties, a range must end at the last one, unless the claim is a subset, listed
below with what holds it.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

from conformance.checking.properties import PROPERTIES
from tests.support.helpers import ROOT

NUMBERS = {
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
}
_NUMBER = "|".join([*NUMBERS, *map(str, NUMBERS.values())])
# Each pattern starts with a literal, which `re` finds fast, and runs on the lowered text.
#: A count of the properties: "eleven properties", "11 properties" (the number before the
#: word, `BEFORE`), or "all eleven" closing a clause ("runs all eleven."), not "all ten stacks".
PROPERTY_WORD = re.compile(r"propert(?:y|ies)\b")
BEFORE = re.compile(rf"(?<!\w)({_NUMBER})\s+\Z")
ALL = re.compile(rf"all\s+({_NUMBER})\b(?!\s+(?!propert)[a-z])")  # after no letter
#: A range of properties from the first: "(a) to (k)", "(a)-(k)" (or an en or em dash),
#: '"a" to "k"'.
RANGE = re.compile(r"a[)\"']\s*(?:to|through|-|\u2013|\u2014|\.\.)\s*[(\"']([a-z])[)\"']")
#: Claims that name a subset on purpose: (path, the line's text around the match) -> what
#: holds it.
SUBSETS = {
    (
        "docs/PORTING.md",
        "(a) to (j), and (k) and (l) skipped",
    ): "an outside port with no composition case: tests/core/docs/test_porting_guide.py",
    (
        "docs/PORTING.md",
        "<!-- property-count -->ten<!-- /property-count --> ✓",
    ): "the same sentence's passes: tests/core/docs/test_porting_guide.py",
}
#: Folders that hold no text of the project's own.
SKIPPED = {"__pycache__", "node_modules", "build", "dist", "bench-out"}
#: Files that are not text.
BINARY = {".png", ".npz", ".jpg", ".gif", ".ico", ".whl", ".gz", ".zip"}


_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _text_files() -> list[Path]:
    found = []
    for path in sorted(ROOT.rglob("*")):
        parts = path.relative_to(ROOT).parts
        if any(p.startswith(".") or p in SKIPPED or p.endswith(".egg-info") for p in parts):
            continue
        # This file's patterns and examples are the stale forms, on purpose.
        if path.is_file() and path.suffix not in BINARY and path != Path(__file__):
            found.append(path)
    return sorted(found)


def claims(text: str) -> list[tuple[int, str, str]]:
    """Every claim about all the properties in `text`: (line number, the line, what is wrong
    with it), or "" in place of what is wrong where the claim is the code's."""
    last, count = PROPERTIES[-1].id, len(PROPERTIES)
    found = set()

    def add(match: re.Match, wrong: str) -> None:
        start = text.rfind("\n", 0, match.start()) + 1
        stop = text.find("\n", match.end())
        line = text[start : None if stop == -1 else stop]
        found.add((text.count("\n", 0, match.start()) + 1, line, wrong))

    # The whole text at once: a search per line would cost a second over the repository.
    lowered = text.translate(_LOWER)  # ASCII only: the offsets stay the text's
    for match in PROPERTY_WORD.finditer(lowered):
        number = BEFORE.search(lowered, max(0, match.start() - 20), match.start())
        if number:
            said = NUMBERS.get(number.group(1)) or int(number.group(1))
            add(match, "" if said == count else f"says {said} properties, the code has {count}")
    for match in ALL.finditer(lowered):
        if match.start() and (
            lowered[match.start() - 1].isalnum() or lowered[match.start() - 1] == "_"
        ):
            continue  # "install 10", not "all"
        said = NUMBERS.get(match.group(1)) or int(match.group(1))
        add(match, "" if said == count else f"says {said} properties, the code has {count}")
    for match in RANGE.finditer(lowered):
        if lowered[match.start() - 1 : match.start()] not in ("(", '"', "'"):
            continue  # "a) to (b)" after a word, not "(a)"
        end = match.group(1)
        add(match, "" if end == last else f"ends at ({end}), the last property is ({last})")
    return sorted(found)


def _subset(relative: str, line: str) -> bool:
    return any(path == relative and text in line for path, text in SUBSETS)


def test_every_count_and_range_of_the_properties_is_the_codes():
    stale = []
    for path in _text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # not text
        relative = path.relative_to(ROOT).as_posix()
        for number, line, wrong in claims(text):
            if wrong and not _subset(relative, line):
                stale.append(f"{relative}:{number}: {wrong}: {line.strip()[:120]}")
    assert not stale, "\n".join(stale)


def test_every_subset_listed_is_still_in_its_file():
    for path, text in SUBSETS:
        assert text in (ROOT / path).read_text(), (path, text)


def test_the_search_finds_each_form_of_a_stale_claim():
    # The patterns themselves, on the forms the brief names and on what they must leave alone.
    count, last = len(PROPERTIES), PROPERTIES[-1].id
    stale = [
        "all ten properties should pass",
        "checked on 10 properties:",
        "the properties (a) to (j).",
        "the properties (a)-(i), their strategies",
        "every property (a)\u2013(i):",
        '- `id`: the letter, "a" to "j".',
        "which runs all ten.",
    ]
    for line in stale:
        assert [wrong for _, _, wrong in claims(line)] != [""], line
        assert all(wrong for _, _, wrong in claims(line)), line
    words = {v: k for k, v in NUMBERS.items()}
    current = [
        f"checked on {words[count]} properties:",
        f"every property, (a) to ({last}), at the dev profile",
        f"which runs all {words[count]}.",
    ]
    for line in current:
        assert [wrong for _, _, wrong in claims(line)] == [""], line
    for line in ["on all ten stacks", "with all 28 mutants", "(b) to (f)", "a to j"]:
        assert claims(line) == [], line
