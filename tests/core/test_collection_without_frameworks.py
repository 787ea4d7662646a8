"""The test suite collects with a framework missing: no test module needs one to import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT, without_frameworks


@pytest.mark.parametrize(
    "blocked",
    # Two collections cover three absences: JAX itself, and torch with JAX's libraries.
    [("jax", "jaxlib"), ("torch", "flax", "equinox")],
    ids=lambda names: "-".join(names),
)
def test_collection_succeeds_with_a_framework_missing(tmp_path, blocked):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=without_frameworks(tmp_path, blocked),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "error" not in done.stdout.lower().split("\n")[-2], done.stdout[-2000:]
