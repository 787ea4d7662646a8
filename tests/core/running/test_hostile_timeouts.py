"""Progress is a message or CPU time: a slow first compile passes, hangs still time out.

The hostile ports (tests/support/hostile.py) compute for over two timeouts on their first
forward, sleep in vjp, spin forever, or never finish loading.
"""

from __future__ import annotations

import re

import pytest

from tests.support.helpers import run_python
from tests.support.hostile import (
    COMPUTE_TIMEOUT,
    LOAD_TIMEOUT,
    SHORT_TIMEOUT,
    outcomes_of,
    run_json,
    write_hostile_ports,
)

#: It starts processes (`-m 'not subprocess'` leaves it out); the full tier's.
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="22 s alone: waits out a slow compile and three hangs"),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return write_hostile_ports(tmp_path_factory.mktemp("hostile"))


def test_a_slow_first_compile_passes_and_hangs_still_time_out(hostile):
    """Progress is a message or CPU time: a compile computes, a hang sleeps or never ends.
    Loading a port is judged the same way, against --load-timeout."""
    args = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev"]
    args += ["--examples", "3", "--timeout", SHORT_TIMEOUT, "--jobs", "4"]
    args += ["--load-timeout", LOAD_TIMEOUT, "--compute-timeout", COMPUTE_TIMEOUT]
    args += ["--property", "b", "--property", "c"]
    for name in ("compiling_port", "hang_port", "spinning_port", "stuck_loading_port"):
        args += ["--implementation", name]
    done = run_python(args, hostile, timeout=600)
    report = run_json(done)
    compiling = outcomes_of(report, "compiling_port")
    # Its first forward sent no message for over two timeouts, computing all along.
    assert compiling["b_forward"]["status"] == "pass", compiling["b_forward"]
    assert compiling["b_forward"]["seconds"] > 2 * float(SHORT_TIMEOUT)
    assert compiling["c_vjp"]["status"] == "pass", compiling["c_vjp"]
    # A sleeping hang is still stopped after the timeout, as before.
    hung = outcomes_of(report, "hang_port")["c_vjp"]
    assert hung["status"] == "timeout", hung
    assert f"no progress for {SHORT_TIMEOUT} s" in hung["message"]
    assert "the port's vjp" in hung["message"]
    # A hang that computes is stopped too, at its bound.
    spinning = outcomes_of(report, "spinning_port")["b_forward"]
    assert spinning["status"] == "timeout", spinning
    assert "computing all along" in spinning["message"]
    assert f"(the limit is {COMPUTE_TIMEOUT} s: --compute-timeout)" in spinning["message"]
    quiet = re.search(r"no progress for (\d+) s", spinning["message"])
    assert quiet, spinning["message"]
    assert int(quiet[1]) >= int(COMPUTE_TIMEOUT), spinning["message"]
    assert "the port's forward" in spinning["message"]
    # A port stuck while loading is stopped after the load timeout, not the example's.
    (stuck,) = [p for p in report["ports"] if p["name"] == "stuck_loading_port"]
    assert stuck["state"] == "timed out", stuck
    assert stuck["reason"].endswith("while loading the port"), stuck["reason"]
    quiet = re.match(r"no progress for (\d+) s", stuck["reason"])
    assert quiet, stuck["reason"]
    assert int(quiet[1]) >= int(LOAD_TIMEOUT), stuck["reason"]
    assert done.returncode == 1
