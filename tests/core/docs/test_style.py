"""The code style gate: ruff's lint and format checks, as CI runs them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command):
    if importlib.util.find_spec("ruff") is None:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    # `python -m ruff`: the venv's ruff, even when the venv is not activated.
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, str(ROOT)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
