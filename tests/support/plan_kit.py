"""`plan --measure`'s line for one framework, as the command prints it without `--framework`
(the plan's a = 1), and its measured and predicted evaluations."""

from __future__ import annotations

import re

from conformance.benchmark import plan as planning

_EVALUATIONS = re.compile(r"; (?P<runs>[\d.]+) evaluations measured, (?P<predicted>\d+) predicted")


def measured_line(framework: str, depth: int, units: float) -> tuple[str, float, int]:
    """`(line, evaluations measured, evaluations predicted)` of the optimum within `units` at
    `depth` (B = 256, F = 64) run through `framework`; AssertionError where the line has none."""
    plan = planning.make_plan(depth, units, 256, 64, [framework], planning.DEFAULT_INTERNALS)
    line = list(planning.measured_lines(plan, [framework]))[-1]
    found = _EVALUATIONS.search(line)
    assert found, line
    return line, float(found["runs"]), int(found["predicted"])
