"""A dying canonical port, the text report of a crash, and pytest's run of hostile ports.

The ports are tests/support/hostile.py's; each test is a run of its own, the three started at
once (each waits on a crash or a hang for much of its time).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.helpers import run_python
from tests.support.hostile import TIMEOUT, outcomes_of, run_json, write_hostile_ports

#: It starts processes (`-m 'not subprocess'` leaves it out); the full tier's.
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="16 s alone: three runs, each waits out a crash or a hang"),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return write_hostile_ports(tmp_path_factory.mktemp("hostile"))


DYING_CANONICAL = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev"]
DYING_CANONICAL += ["--examples", "3", "--timeout", TIMEOUT, "--jobs", "1"]
DYING_CANONICAL += ["--implementation", "jax_checkpoint", "--canonical", "dying_canonical"]

TEXT_REPORT = ["-m", "conformance", "--no-mutants", "--profile", "dev", "--examples", "2"]
TEXT_REPORT += ["--implementation", "segv_port", "--property", "b", "--timeout", TIMEOUT]

PYTEST = ["-m", "pytest", "tests/core/running/test_conformance.py", "-n", "2", "-rA", "-q"]
PYTEST += ["-p", "no:cacheprovider", "--conformance-timeout", TIMEOUT]
PYTEST += ["--conformance-examples", "3", "-k", "b_forward or c_vjp or f_end_to_end"]
PYTEST += [a for name in ("jax_checkpoint", "segv_port", "hang_port") for a in ("--port", name)]


@pytest.fixture(scope="module")
def runs(hostile) -> dict:
    """The three runs, started at once; each test reads its own."""
    with ThreadPoolExecutor(3) as pool:  # it returns once each has ended
        return {
            "dying canonical": pool.submit(run_python, DYING_CANONICAL, hostile, timeout=600),
            "text report": pool.submit(run_python, TEXT_REPORT, hostile, timeout=600),
            "pytest": pool.submit(run_python, PYTEST, hostile, timeout=900),
        }


def test_a_crash_of_the_canonical_port_skips_what_needs_it(runs):
    done = runs["dying canonical"].result()
    report = run_json(done)
    assert done.returncode == 1
    failure = report["canonical_failure"]
    assert "dying_canonical" in failure
    assert "exit code 3" in failure
    assert "the canonical port's forward" in failure
    outcomes = outcomes_of(report, "jax_checkpoint")
    for key in ("b_forward", "c_vjp", "f_end_to_end"):
        assert outcomes[key]["status"] == "skip", outcomes[key]
        assert "dying_canonical" in outcomes[key]["message"]
    for key in ("d_on_off", "e_evidence", "g_bad_inputs", "h_hygiene"):
        assert outcomes[key]["status"] == "pass", outcomes[key]


def test_the_text_report_names_the_crash_and_gives_a_replay_command(runs):
    done = runs["text report"].result()
    assert done.returncode == 1
    text = " ".join(done.stdout.split())  # rich wraps long lines
    assert "CRASHED segv_port · b_forward" in text
    assert "killed by SIGSEGV" in text
    assert "replay: python -m conformance run --implementation segv_port" in text
    assert "segv_port printed" in text


def test_pytest_keeps_the_other_ports_results(runs):
    done = runs["pytest"].result()
    lines = done.stdout.splitlines()

    def status(port: str, key: str) -> str:
        found = [
            line.split()[0]
            for line in lines
            if re.match(r"(PASSED|FAILED|SKIPPED|ERROR)", line)
            and f"test_property[{port}-{key}]" in line
        ]
        return found[0] if found else "missing"

    assert done.returncode == 1, done.stdout[-3000:]
    for key in ("b_forward", "c_vjp", "f_end_to_end"):
        assert status("jax_checkpoint", key) == "PASSED", done.stdout[-3000:]
    # (f) calls neither forward nor vjp, where these two crash and hang.
    assert status("segv_port", "b_forward") == "FAILED"
    assert status("segv_port", "f_end_to_end") == "PASSED"
    assert status("hang_port", "c_vjp") == "FAILED"
    assert status("hang_port", "f_end_to_end") == "PASSED"
    assert "SIGSEGV" in done.stdout
    assert f"no progress for {TIMEOUT} s" in done.stdout
