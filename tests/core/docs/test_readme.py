"""The README's facts that code can check: the ports, the properties, its length and links."""

from __future__ import annotations

import re

import implementations
from conformance.checking.properties import PROPERTIES
from tests.support.helpers import ROOT

README = (ROOT / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_every_registered_port_has_a_row_in_the_ports_table():
    rows = re.findall(r"^\| `(\w+)`", _section("The ports"), flags=re.MULTILINE)
    # Grouped by stack in the README, so compare as sets; no port twice.
    assert sorted(rows) == sorted(implementations.BUILTIN)
    assert len(rows) == len(set(rows))


def test_the_properties_table_lists_every_property():
    letters = re.findall(r"^\| \(([a-z])\) \|", _section("The suite"), flags=re.MULTILINE)
    assert letters == [prop.id for prop in PROPERTIES]
    words = {9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}
    assert f"on {words.get(len(PROPERTIES), len(PROPERTIES))} properties" in README


def test_the_readme_is_short_and_names_no_count_that_would_go_stale():
    # A user's page: the detail lives in docs/. A count of ports or mutants would go stale
    # with the next folder (adding a framework adds its table row and nothing else here).
    assert len(README.splitlines()) <= 200
    assert not re.search(r"\b\d+ (deliberately broken|ports\b|ML stacks)", README)


def test_every_doc_the_readme_links_exists():
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).exists(), link


def test_the_profiles_example_counts_are_the_registered_ones():
    from hypothesis import settings

    from conformance.running import profiles  # registers the profiles

    said = " ".join(_section("Running it").split())
    count = {name: settings.get_profile(name).max_examples for name in profiles.PROFILES}
    assert profiles.DEFAULT == "ci"
    assert f"`ci` (the default, {count['ci']} examples per property, derandomized" in said
    assert f"`dev` ({count['dev']}, derandomized)" in said
    assert f"`thorough` ({count['thorough']}, random" in said
