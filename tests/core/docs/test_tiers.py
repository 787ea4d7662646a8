"""The two tiers: every test marked `slow` says why, and docs/TESTING.md lists them all.

A test goes to the full tier (`@pytest.mark.slow(reason=...)`) only with a reason of one of
two kinds: it takes more than about 10 s alone ("NN s alone: ..."), or it needs something
that is not a pip package ("needs X: ..."). This module reads the marks out of the test
files' code, so that the list cannot drift from what runs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.helpers import ROOT

#: What a reason must look like: "25 s alone: ..." or "needs Debian's chromium: ...".
REASON = re.compile(r"^(?:(?P<seconds>\d+) s alone[^:]*|needs [^:]+): \S")
#: The least time alone that is a reason by itself: the issue's "more than about 10 s".
LEAST_SECONDS = 9
TESTING = ROOT / "docs" / "TESTING.md"
_START, _END = "<!-- full-tier -->", "<!-- /full-tier -->"


def _is_slow_mark(node: ast.AST) -> bool:
    """`pytest.mark.slow`, called or not."""
    target = node.func if isinstance(node, ast.Call) else node
    return (
        isinstance(target, ast.Attribute)
        and target.attr == "slow"
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "mark"
    )


def _reason(mark: ast.AST) -> str | None:
    if not isinstance(mark, ast.Call):
        return None
    for keyword in mark.keywords:
        if keyword.arg == "reason" and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return None


def _where(tree: ast.Module, mark: ast.AST) -> str:
    """The test (or the module, for `pytestmark`) that a mark sits on."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and any(
            mark is decorator for decorator in node.decorator_list
        ):
            return node.name
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                if any(mark is inner for inner in ast.walk(decorator)):
                    return f"{node.name} (some parameters)"
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(mark is inner for inner in ast.walk(node.value)):
            names = [target.id for target in node.targets if isinstance(target, ast.Name)]
            if names and names[0] != "pytestmark":
                return f"the tests marked `{names[0]}`"
    return "the whole module"


def slow_marks() -> list[tuple[str, str, str | None]]:
    """(file, test, reason) for every `slow` mark in the tests, in file order."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if ".slow" not in text:
            continue
        relative = path.relative_to(ROOT).as_posix()
        found += [(relative, test, reason) for test, reason in _marks_in(ast.parse(text))]
    return found


def _marks_in(tree: ast.Module) -> list[tuple[str, str | None]]:
    """(test, reason) for each `slow` mark of a module, in line order."""
    marks = [node for node in ast.walk(tree) if _is_slow_mark(node)]
    # A call's own func is an Attribute that matches too: keep the calls and the bare marks.
    calls = {id(node.func) for node in marks if isinstance(node, ast.Call)}
    marks = sorted(
        (node for node in marks if id(node) not in calls),
        key=lambda node: (node.lineno, node.col_offset),
    )
    return [(_where(tree, mark), _reason(mark)) for mark in marks]


def full_tier_table() -> str:
    """docs/TESTING.md's list of the full tier, as this module reads it from the code."""
    rows = ["| test | why it is in the full tier |", "|---|---|"]
    rows += [f"| `{path}` {test} | {reason} |" for path, test, reason in slow_marks()]
    return "\n".join(rows)


def test_the_full_tier_is_not_empty_and_its_marks_are_found():
    marks = slow_marks()
    assert marks, "no test is marked slow: the full tier would be the fast one"
    # The fixture module of this very check is not one of them.
    assert all(Path(path).name != "test_tiers.py" for path, _, _ in marks)


@pytest.mark.parametrize(("path", "test", "reason"), slow_marks())
def test_every_slow_mark_gives_a_reason_of_a_known_kind(path, test, reason):
    assert reason, f"{path} {test}: `slow` without reason=... (the full tier needs a why)"
    matched = REASON.match(reason)
    assert matched, (
        f"{path} {test}: the reason {reason!r} should read 'NN s alone: why' "
        "or 'needs X: why' (something that is not a pip package)"
    )
    if matched["seconds"] is not None:
        assert int(matched["seconds"]) >= LEAST_SECONDS, (
            f"{path} {test}: {matched['seconds']} s alone is fast-tier time"
        )


def test_testing_md_lists_the_full_tier_as_the_code_marks_it():
    text = TESTING.read_text(encoding="utf-8")
    listed = text.split(_START, 1)[1].split(_END, 1)[0].strip()
    assert listed == full_tier_table(), (
        f"docs/TESTING.md's full tier differs from the code's slow marks; put this between "
        f"its {_START} markers:\n{full_tier_table()}"
    )


def test_a_mark_without_reason_is_found_and_refused():
    # The scan itself, on a module written for it: a bare mark and a call without reason.
    tree = ast.parse(
        "import pytest\n"
        "@pytest.mark.slow\ndef test_a(): ...\n"
        "@pytest.mark.slow(reason='3 s alone: quick')\ndef test_b(): ...\n"
    )
    assert _marks_in(tree) == [
        ("test_a", None),
        ("test_b", "3 s alone: quick"),
    ]
    assert int(REASON.match("3 s alone: quick")["seconds"]) < LEAST_SECONDS
