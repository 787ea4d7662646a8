"""`compare` as a newcomer reads it (issue 76): far fewer lines than the 711 it printed, the
policy matrix one line per port, every table within 100 columns, the verdict last.

Rendered from a recorded comparison (tests/data/report/compare-all.json)."""

from __future__ import annotations

import io
import json

import pytest

from conformance.comparison import restore
from conformance.tables.kinds import compare as render
from conformance.terminal import style
from tests.support.helpers import ROOT

DATA = ROOT / "tests" / "data" / "report"


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


@pytest.fixture(autouse=True)
def default_output():
    style.configure(width=100)
    yield
    style.configure()


def recorded():
    return restore.from_json(json.loads((DATA / "compare-all.json").read_text()))


def printed(comparison) -> list[str]:
    out = Pipe()
    render.print_comparison(comparison, style.console(file=out))
    return out.getvalue().splitlines()


def rows_on_screen(lines: list[str], width: int = 100) -> int:
    return sum(max(1, -(-len(line) // width)) for line in lines)


def test_a_passing_compare_prints_under_200_rows_its_verdict_last():
    comparison = recorded()
    lines = printed(comparison)
    assert rows_on_screen(lines) <= 200, len(lines)  # 471 at 100 columns before
    usable = [p for p in comparison.ports if p.state == "available" and not p.error]
    assert lines[-1] == f"compare passed · {len(usable)} ports against flax_linen · 43 s wall"
    table_lines = [line for line in lines if not line.startswith(("  ", "versions:"))]
    assert max(len(line) for line in table_lines) <= 100, max(table_lines, key=len)
    versions = next(line for line in lines if line.startswith("versions: "))
    assert "jax 0.10.2" in versions  # said once, not under each port's name
    assert sum("jax 0.10.2" in line for line in lines) == 1


def test_the_policy_matrix_is_a_line_per_port_and_a_cross_is_said_under_it():
    comparison = recorded()
    lines = printed(comparison)
    start = lines.index(next(line for line in lines if line.startswith("remat policies:")))
    grid = lines[start + 3 : start + 3 + len([p for p in comparison.ports if p.policies])]
    assert [line.split()[0] for line in grid] == [p.name for p in comparison.ports if p.policies]
    port = comparison.ports[3]
    port.policies[1].expected = "saves {x, a}, expected {x}"
    lines = printed(comparison)
    assert f"  ✗ {port.name} · {port.policies[1].policy}: saves {{x, a}}, expected {{x}}" in lines
    assert lines[-1].startswith("compare failed · ")
    assert f"✗ {port.name} (policies)" in lines[-1]
