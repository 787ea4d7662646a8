"""`--no-shrink`: a failure is reported at the first failing example, and Hypothesis's shrinking
(most of the run for a port that fails everywhere) is not run; by default it is."""

from __future__ import annotations

import json

import pytest

from tests.support.helpers import make_distribution, run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

WRONG_ON_LARGE_X = '''
"""The JAX port, off by one wherever some |x| > 1, and counting its forward calls."""

import os

import numpy as np

from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint


class WrongOnLargeX(JaxCheckpoint):
    name = "wrong_on_large_x"

    def forward(self, params, x, *, checkpoint=True):
        with open(os.environ["FORWARD_CALLS"], "a") as calls:
            calls.write("forward\\n")
        out = super().forward(params, x, checkpoint=checkpoint)
        return out + 1 if np.any(np.abs(np.asarray(x)) > 1) else out
'''


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    pytest.importorskip("flax")  # the canonical port
    root = tmp_path_factory.mktemp("shrink")
    points = {"wrong_on_large_x": "wrong_shrink:WrongOnLargeX"}
    return make_distribution(root, "wrong-shrink", points, {"wrong_shrink.py": WRONG_ON_LARGE_X})


def _forward_calls(port, tmp_path, monkeypatch, *flags: str) -> tuple[dict, int]:
    """Property (b) on the port, in-process under the derandomized profile (no example
    database to replay an earlier failure): its outcome and how often forward was called."""
    calls = tmp_path / f"calls{len(flags)}"
    monkeypatch.setenv("FORWARD_CALLS", str(calls))
    args = ["-m", "conformance", "--implementation", "wrong_on_large_x", "--property", "b"]
    args += ["--profile", "ci", "--examples", "20", "--no-mutants", "--in-process", "--json"]
    done = run_python([*args, *flags], port)
    assert done.returncode == 1, done.stderr[-3000:]
    (outcome,) = json.loads(done.stdout)["ports"][0]["outcomes"]
    return outcome, len(calls.read_text().splitlines())


def test_no_shrink_reports_the_first_failure_and_the_default_shrinks_it(
    port, tmp_path, monkeypatch
):
    found, calls_found = _forward_calls(port, tmp_path, monkeypatch, "--no-shrink")
    shrunk, calls_shrunk = _forward_calls(port, tmp_path, monkeypatch)
    for outcome in (found, shrunk):
        assert outcome["status"] == "fail", outcome
        assert "forward output" in outcome["message"], outcome["message"]
    # Shrinking draws the failing example again and tries smaller ones: more forward calls.
    assert calls_found < calls_shrunk, (calls_found, calls_shrunk)
    # Unshrunk under a derandomized profile, the failure is one of the kept examples and has
    # no Hypothesis blob: its replay command runs the same examples again (docs/USAGE.md).
    assert not found["reproduce"]
    assert "--reproduce" not in found["replay"]
    assert "--reproduce" in shrunk["replay"]
