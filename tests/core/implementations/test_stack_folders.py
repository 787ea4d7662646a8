"""Each stack's test folder skips, with the reason, where its framework is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from implementations import manifests
from tests.support.helpers import ROOT, without_frameworks

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


def _needed(manifest: manifests.Manifest) -> str:
    """The module every port of the stack needs (the stack's own where it is one of them)."""
    common = set.intersection(*(set(p.modules) for p in manifest.ports))
    return manifest.stack if manifest.stack in common else sorted(common)[0]


#: Each stack's test folder (its manifest's `tests`) and the module whose absence skips it (a
#: process port's folder skips by fixture instead: its program, not a module).
STACK_FOLDERS = {m.tests: _needed(m) for m in manifests.manifests() if m.ports[0].modules}


def test_every_stack_folder_has_a_skipping_conftest():
    folders = {p.parent.name for p in (ROOT / "tests").glob("*/conftest.py")}
    # process/: its fixtures skip, with the reason, without g++, Node or Chromium.
    assert folders == {*STACK_FOLDERS, "process"}


# Not jax (the canonical port's), keras (it needs a backend) or tensorflow (slow to block).
BLOCKABLE = sorted(set(STACK_FOLDERS) - {"jax", "keras", "tensorflow"})


@pytest.fixture(scope="module")
def run_without_stacks(tmp_path_factory) -> str:
    """One pytest run of every blockable folder, each folder's framework blocked: its output.
    The folders are named on the command line, so their conftests load before collection."""
    env = without_frameworks(
        tmp_path_factory.mktemp("blocked"), [STACK_FOLDERS[f] for f in BLOCKABLE]
    )
    command = [sys.executable, "-m", "pytest", *(f"tests/{f}" for f in BLOCKABLE)]
    command += ["-q", "-rs", "-n", "0", "-p", "no:cacheprovider"]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    # Every file skipped at collection: pytest's "no tests collected", not an error.
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, output
    assert " error" not in output, output
    assert "passed" not in output, output
    return output


@pytest.mark.parametrize("folder", BLOCKABLE)
def test_a_missing_stack_skips_its_folder_with_the_reason(run_without_stacks, folder):
    reason = f"is not installed (No module named '{STACK_FOLDERS[folder]}'"
    # -rs groups skips by reason: one line per folder, "SKIPPED [files] where: reason".
    (line,) = [line for line in run_without_stacks.splitlines() if reason in line]
    files = len(list((ROOT / "tests" / folder).glob("test_*.py")))
    assert line.startswith(f"SKIPPED [{files}] "), line


def test_no_module_of_the_suite_imports_a_framework():
    """A framework's code lives in its stack's folder: the suite's own modules import none
    (the canonical port's mutants, for one, are the JAX stack's)."""
    import ast

    frameworks = {module for m in manifests.manifests() for p in m.ports for module in p.modules}
    found = []
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            hits = [n for n in names if n.split(".")[0] in frameworks]
            found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in hits]
    assert not found, "\n".join(found)


def test_no_string_in_the_suites_code_names_a_built_in_port_or_a_stack_s_mutant():
    """The suite reaches the ports through the registry (the canonical one through
    `manifests.CANONICAL_PORT`), and a stack's mutants through its manifest (which says the
    property that must kill each, `killed_by`), never by a name written into its code."""
    import io
    import re
    import tokenize

    mutants = {s.name for m in manifests.manifests() for s in m.mutants}
    names = [*manifests.ports(), *sorted(mutants)]
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    found = []
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
        for token in tokens:
            prose = token.string.startswith(('"""', "'''"))  # docstrings and long texts
            if token.type == tokenize.STRING and not prose and pattern.search(token.string):
                found.append(f"{path.relative_to(ROOT)}:{token.start[0]} {token.string[:60]}")
    assert not found, "\n".join(found)
