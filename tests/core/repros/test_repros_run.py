"""Each repro still shows its finding: the day upstream fixes one, this fails and says so."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.core.repros.table import REPROS, Repro, matches, rows

pytestmark = pytest.mark.slow(
    reason="40 s alone: runs every repro in a process of its own, each loads its framework"
)
#: Per script: tensorflow's take 18 s alone on a loaded machine; a hang fails, it never waits.
TIMEOUT_SECONDS = 300


@pytest.mark.parametrize("repro", rows(), ids=lambda repro: repro.script)
def test_the_repro_still_prints_its_finding(repro: Repro):
    if importlib.util.find_spec(repro.framework) is None:
        pytest.skip(f"{repro.framework} is not installed")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, str(REPROS / repro.script)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        env=env,
        check=False,
    )
    assert result.returncode == 0, f"{repro.script} failed:\n{result.stderr[-2000:]}"
    last = result.stdout.strip().splitlines()[-1:] or ["(nothing)"]
    assert matches(repro, result.stdout), (
        f"{repro.script} printed {last[0]!r}, not /{repro.pattern}/: {repro.framework} may have "
        f"fixed '{repro.finding}' ({repro.reference}). Update the declaration in "
        f"implementations/stacks/{repro.framework}/ and this row of repros/README.md."
    )
