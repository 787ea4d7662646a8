"""Each stack's test folder skips, with the reason, where its framework is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from implementations import manifests
from tests.helpers import ROOT, without_frameworks


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
@pytest.mark.parametrize("folder", sorted(set(STACK_FOLDERS) - {"jax", "keras", "tensorflow"}))
def test_a_missing_stack_skips_its_folder_with_the_reason(tmp_path, folder):
    # The folder named on the command line: its conftest loads before collection.
    env = without_frameworks(tmp_path, [STACK_FOLDERS[folder]])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"tests/{folder}",
            "-q",
            "-rs",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    # Every file skipped at collection: pytest's "no tests collected", not an error.
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, output
    assert " error" not in output, output
    assert "passed" not in output, output
    assert f"is not installed (No module named '{STACK_FOLDERS[folder]}'" in output, output
    assert "skipped" in output, output
