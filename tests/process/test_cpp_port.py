"""The C++ process port of `cpp_port/`, written from docs/PROTOCOL.md alone, passes every
property of the suite: the protocol is enough to bring a port in any language under it.

It runs as a user's port runs: registered through an `exec:` entry point of a distribution
(no Python written for it), checked by `python -m conformance run`.
"""

from __future__ import annotations

import json

import pytest

from tests.support.helpers import run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


@pytest.mark.timeout(900)
def test_the_cpp_port_passes_every_property(cpp_distribution):
    args = ["-m", "conformance", "run", "--implementation", "cpp_port", "--profile", "dev"]
    result = run_python([*args, "--no-mutants", "--json"], cpp_distribution, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (port,) = json.loads(result.stdout)["ports"]
    assert port["framework"] == "c++"
    statuses = {outcome["property"]: outcome["status"] for outcome in port["outcomes"]}
    assert len(statuses) == 10  # (a)-(j): (j) on none and full, its hello declares no more
    assert set(statuses.values()) == {"pass"}, statuses
