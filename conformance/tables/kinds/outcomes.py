"""A run outcome as a compact cell, the same in every matrix (run, merge, versions): the
status and examples, and under them the worst error/bound."""

from __future__ import annotations

from typing import Any

from ..model import Cell
from ..numbers import ratio

#: A status -> its words and mark; a failing status's note is the example it failed at.
STATUSES = {
    "pass": ("✓{examples}", "pass"),
    "fail": ("✗fail", "fail"),
    "crashed": ("✗crash", "fail"),
    "timeout": ("✗hang", "fail"),
    "skip": ("skip", "skip"),
    "reference": ("ref", "muted"),
    "xfail": ("xfail", "warn"),
    "xpass": ("xpass", "fail"),
}
FAILED_AT = ("fail", "crashed", "timeout")
#: The statuses that fail a run.
FAILING = ("fail", "crashed", "timeout", "xpass")
#: A status in words, for a row's details.
WORDS = {
    "pass": "✓ pass",
    "reference": "ref: the canonical port",
    "skip": "skipped",
    "xfail": "xfail: an expected failure (an expectations file)",
    "fail": "✗ FAIL",
    "crashed": "✗ CRASH",
    "timeout": "✗ HANG",
    "xpass": "✗ XPASS: a stale expected failure",
}
#: A port that did not load: its cells.
NOT_LOADED = Cell("·", "muted")
#: A property the run was interrupted before (`not_run`), and a port it never loaded.
NOT_RUN_CELL = Cell("—", "muted", title="not run: the run was interrupted first")
#: A port whose framework is not installed: its cells (neutral: not a failure).
NOT_INSTALLED_CELL = Cell("○", "not-installed", title="not installed")

LEGEND = (
    "✓N: passed on all N examples it ran. A smaller N than the others is never a partial "
    "pass: a property with a fixed list of cases runs it in full, and Hypothesis stops early "
    "when a property's inputs run out. Below it: the worst error/bound over them (1 would "
    "fail). ✗fail, ✗crash, ✗hang @N: failed at its Nth example (crash: its worker died; "
    "hang: it was stopped after the timeout). ref: the canonical port, the reference. skip: "
    "not run here. xfail, xpass: failed, passed where an expectations file expects a "
    "failure. ·: the port did not load. —: not run (the run was interrupted first). ○: not "
    "installed (its framework is not in this environment: not a failure)."
)


def cell(outcome: dict[str, Any] | None) -> Cell:
    """One outcome (as `run --json` holds it) as a cell; a status this version does not
    know is said as it is, as a failure."""
    if outcome is None:
        return Cell()
    status = outcome["status"]
    if status not in STATUSES:
        return Cell(str(status), "fail")
    words, mark = STATUSES[status]
    examples = outcome.get("examples") or 0
    if status in FAILED_AT:
        return Cell(words, mark, note=f"@{examples}")
    if status == "pass":
        # Two digits: ten and more property columns, a port and the time fit 80 columns.
        worst = ratio(outcome.get("worst_ratio"), digits=2)
        return Cell(words.format(examples=examples), mark, note=worst)
    return Cell(words, mark)


def column(key: str) -> str:
    """A property's column: `(c)` for `c_vjp`."""
    return f"({key.split('_', 1)[0]})"


def names(properties: Any) -> str:
    """The property columns by their short names: `(a) init · (b) forward ...`."""
    split = (key.partition("_") for key in properties)
    return " · ".join(f"({letter}) {name.replace('_', ' ')}" for letter, _, name in split)
