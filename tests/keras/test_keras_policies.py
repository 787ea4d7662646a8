"""Keras under remat policies: none and full only, and the pinned degradation of
`RematScope(mode="activations")`, which saves more than no remat at all (issue 21).

Run on Keras's JAX backend in a fresh interpreter (Keras keeps its first
backend), where the JAX instrument can read the residuals.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from conformance.checking import policy_expectations
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

_PROBE = """
import json
from implementations.stacks.keras import degradations

holds, seen = degradations.activations_saves_more_than_none()
print(json.dumps({"none": degradations.kept(None), "activations": degradations.kept("activations"),
                  "holds": holds, "seen": seen}))
"""


def _probe() -> dict:
    for module in ("keras", "jax"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_remat_scope_activations_saves_more_than_no_remat_a_documented_degradation():
    seen = _probe()
    (documented,) = [d for d in policy_expectations.all_degradations() if d.family == "keras"]
    # Measured on the versions it names (the version sweep: docs/VERSIONS.md); its probe is
    # what this test and the sweep run.
    assert re.fullmatch(r"keras \d+\.\d+\.\d+( to \d+\.\d+\.\d+)?", documented.measured)
    assert documented.probe.endswith("degradations:activations_saves_more_than_none")
    assert seen["holds"], seen["seen"]
    # No remat keeps x, a and relu's mask; "activations" keeps x, h (the remat'd relu's
    # input) and a: a float vector where a boolean mask was. Fails the day Keras changes.
    assert seen["none"]["roles"] == ["a", "mask", "x"]
    assert seen["activations"]["roles"] == ["a", "h", "x"]
    assert seen["activations"]["bytes"] > seen["none"]["bytes"]
