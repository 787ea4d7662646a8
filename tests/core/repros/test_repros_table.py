"""repros/: every script has its row, and each stays a small standalone repro."""

from __future__ import annotations

import ast
import re

import pytest

from tests.core.repros.table import REPROS, Repro, matches, rows

#: "at most about 30 lines" (issue 78): code lines, not counting the docstring or blank lines.
MOST_CODE_LINES = 32
#: What a repro may import besides its framework.
ALSO_ALLOWED = {"numpy", "os", "tempfile"}
#: A framework that runs on another imports it too (Keras differentiates with its backend's).
RUNS_ON = {
    "keras": {"tensorflow", "jax", "torch"},
    "transformers": {"torch"},
    "deepspeed": {"torch"},
}


def _code_lines(source: str) -> int:
    tree = ast.parse(source)
    doc = tree.body[0] if tree.body and isinstance(tree.body[0], ast.Expr) else None
    skipped = set(range(doc.lineno, doc.end_lineno + 1)) if doc else set()
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if number not in skipped and line.strip() and not line.strip().startswith("#")
    )


def _imported_roots(source: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add(node.module.split(".")[0])
    return roots


def test_every_script_has_one_row_and_every_row_a_script():
    listed = [repro.script for repro in rows()]
    assert len(listed) == len(set(listed)), f"a script listed twice: {listed}"
    on_disk = sorted(path.name for path in REPROS.glob("*.py"))
    assert sorted(listed) == on_disk, "repros/README.md's table and repros/*.py differ"


@pytest.mark.parametrize("repro", rows(), ids=lambda repro: repro.script)
def test_each_repro_is_short_imports_only_its_framework_and_names_a_reference(repro: Repro):
    source = (REPROS / repro.script).read_text(encoding="utf-8")
    assert _code_lines(source) <= MOST_CODE_LINES, f"{repro.script}: more than a short repro"
    allowed = ALSO_ALLOWED | {repro.framework} | RUNS_ON.get(repro.framework, set())
    foreign = _imported_roots(source) - allowed
    assert not foreign, f"{repro.script} imports {sorted(foreign)} besides {repro.framework}"
    assert repro.finding, f"{repro.script}: its row names no finding"
    assert repro.reference, f"{repro.script}: its row names no upstream reference"
    re.compile(repro.pattern)


def test_a_line_matches_only_the_whole_pattern():
    repro = Repro("x.py", "numpy", "f", "none", r"gradients differ by [1-9]\d*\.\d, forward equal")
    assert matches(repro, "noise\ngradients differ by 17.0, forward equal\n")
    assert not matches(repro, "gradients differ by 0.0, forward equal")  # upstream fixed it
    assert not matches(repro, "gradients differ by 17.0, forward equal, and more")
    assert not matches(repro, "")
