"""The README's facts that code can check: the ports, the properties, the mutants, the layout."""

from __future__ import annotations

import re

import implementations
from conformance.checking.properties import PROPERTIES
from conformance.mutants import MUTANTS
from tests.helpers import ROOT

README = (ROOT / "README.md").read_text()

_NUMBER_WORDS = {12: "twelve", 13: "thirteen", 14: "fourteen"}
_NUMBER_WORDS |= {15: "fifteen", 16: "sixteen", 17: "seventeen"}


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_every_registered_port_has_a_row_in_the_ports_table():
    rows = re.findall(r"^\| `(\w+)`", _section("The ports"), flags=re.MULTILINE)
    # Grouped by stack in the README, so compare as sets; no port twice.
    assert sorted(rows) == sorted(implementations.BUILTIN)
    assert len(rows) == len(set(rows))


def test_the_port_count_in_the_introduction():
    count = len(implementations.BUILTIN)
    assert f"ported to\n{_NUMBER_WORDS.get(count, count)} ML stacks" in README


def test_the_properties_table_lists_every_property():
    letters = re.findall(r"^\| \(([a-z])\) \|", _section("The suite"), flags=re.MULTILINE)
    assert letters == [prop.id for prop in PROPERTIES]
    words = {9: "nine", 10: "ten", 11: "eleven"}
    assert f"on {words.get(len(PROPERTIES), len(PROPERTIES))} properties" in README


def test_the_mutant_count():
    assert f"loads {len(MUTANTS)} deliberately broken ports" in README


def test_every_path_in_the_layout_exists():
    block = _section("Layout").split("```")[1]
    top = None
    checked = 0
    for line in block.splitlines():
        names = re.split(r"\s{2,}", line.strip())
        if not line.startswith(" "):
            top = ROOT / names[0]
            assert top.is_dir(), names[0]
            checked += 1
            continue
        # An indented line: names, two spaces or more apart, then maybe a description
        # (the first chunk with a space inside), or a description's next line.
        for name in names:
            if " " in name:
                break
            assert (top / name).exists(), f"{top.name}/{name}"
            checked += 1
    assert checked > 20


def test_the_readme_stands_alone():
    assert "../shared" not in README
    assert "DESIGN.md" not in README
