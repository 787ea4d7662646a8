"""Each stack's test folder skips, with the reason, where its framework is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT, without_frameworks

STACK_FOLDERS = {"jax": "jax", "torch": "torch", "tensorflow": "tensorflow", "mlx": "mlx"}
STACK_FOLDERS |= {"paddle": "paddle", "mindspore": "mindspore"}
STACK_FOLDERS |= {"deepspeed": "deepspeed"}


def test_every_stack_folder_has_a_skipping_conftest():
    folders = {p.parent.name for p in (ROOT / "tests").glob("*/conftest.py")}
    # process/: its fixtures skip, with the reason, without g++, Node or Chromium.
    assert folders == {*STACK_FOLDERS, "keras", "process"}


@pytest.mark.parametrize("folder", ["torch", "mlx", "paddle", "mindspore", "deepspeed"])
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
