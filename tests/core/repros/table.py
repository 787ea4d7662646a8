"""repros/README.md's table of findings, read as the tests use it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.support.helpers import ROOT

REPROS = ROOT / "repros"
_START, _END = "<!-- repros -->", "<!-- /repros -->"
_COLUMNS = ["script", "framework", "finding", "upstream reference", "expected one-line pattern"]


@dataclass(frozen=True)
class Repro:
    """One row: a script, the framework it imports, and the line it must print."""

    script: str
    framework: str
    finding: str
    reference: str
    pattern: str


def _cell(text: str) -> str:
    """A cell without its code quotes (a whole-cell `...`)."""
    text = text.strip()
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] == "`" else text


def rows() -> list[Repro]:
    """The table's rows, in order; its header is checked so a column cannot drift."""
    text = (REPROS / "README.md").read_text(encoding="utf-8")
    table = text.split(_START, 1)[1].split(_END, 1)[0].strip().splitlines()
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    assert header == _COLUMNS, f"repros/README.md's table reads {header}, not {_COLUMNS}"
    found = []
    for line in table[2:]:
        cells = [_cell(cell) for cell in line.strip().strip("|").split("|")]
        assert len(cells) == len(_COLUMNS), f"repros/README.md: a row of {len(cells)} cells: {line}"
        found.append(Repro(*cells))
    return found


def matches(repro: Repro, output: str) -> bool:
    """Whether the script's last line of output shows the finding its row expects."""
    lines = output.strip().splitlines()
    return bool(lines) and re.fullmatch(repro.pattern, lines[-1].strip()) is not None
