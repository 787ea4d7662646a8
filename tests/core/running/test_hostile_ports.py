"""The run survives its ports: a crash, a hang, noise and vague errors, in one CLI run.

Four hostile ports (tests/support/hostile.py) opt in to JAX's worker, so the crash and the hang
happen in a worker shared with `jax_checkpoint` and the ports after them. Every test asserts
what the report says about each, and that the good port's results survive.
"""

from __future__ import annotations

import re

import pytest

from tests.support.helpers import run_python
from tests.support.hostile import TIMEOUT, outcomes_of, run_json, write_hostile_ports

#: It starts processes (`-m 'not subprocess'` leaves it out); the full tier's.
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="20 s alone: waits out a hanging port's timeout"),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return write_hostile_ports(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def hostile_run(hostile, tmp_path_factory):
    """One run: the good port and four hostile ones, JSON out; the hang is its first vjp."""
    args = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev"]
    args += ["--examples", "3", "--timeout", TIMEOUT, "--jobs", "2"]
    for name in ("jax_checkpoint", "segv_port", "hang_port", "noisy_port", "vague_port"):
        args += ["--implementation", name]
    once = {"HANG_ONCE": str(tmp_path_factory.mktemp("hang") / "hung")}
    done = run_python(args, hostile, timeout=600, env=once)
    return done, run_json(done)


def test_the_run_finishes_fails_and_prints_one_json_document(hostile_run):
    done, report = hostile_run
    assert done.returncode == 1, done.stderr[-3000:]
    assert report["schema"] >= 2
    assert report["failed"] is True
    # The noise reached stdout only inside the JSON, as the port's captured output.
    assert not [line for line in done.stdout.splitlines() if line.startswith("noisy_port")]


def test_the_good_port_keeps_its_results(hostile_run):
    _, report = hostile_run
    outcomes = outcomes_of(report, "jax_checkpoint")
    assert {o["status"] for o in outcomes.values()} == {"pass"}, outcomes


def test_the_crash_is_named_and_the_rest_of_the_port_still_runs(hostile_run):
    _, report = hostile_run
    outcomes = outcomes_of(report, "segv_port")
    crashed = outcomes["b_forward"]
    assert crashed["status"] == "crashed"
    message = crashed["message"]
    assert "SIGSEGV" in message
    assert "the port's forward" in message
    assert "example: params D=" in message
    assert "segv_port: about to read address 0" in message  # the last lines it printed
    assert "Fatal Python error" in message  # faulthandler's stack of the crash
    assert "--implementation segv_port --property b_forward" in crashed["replay"]
    # Properties that never call forward ran in a fresh worker and passed; (h) hands forward
    # the arrays whose writes it checks, and crashed there too.
    for key in ("e_evidence", "f_end_to_end", "g_bad_inputs"):
        assert outcomes[key]["status"] == "pass", outcomes[key]
    assert outcomes["h_hygiene"]["status"] == "crashed", outcomes["h_hygiene"]


def test_the_hang_is_stopped_and_named(hostile_run):
    _, report = hostile_run
    outcomes = outcomes_of(report, "hang_port")
    hung = outcomes["c_vjp"]
    assert hung["status"] == "timeout"
    assert f"no progress for {TIMEOUT} s" in hung["message"]
    assert "the port's vjp" in hung["message"]
    # Its replay waits as long as this run did (dev's own timeout is longer).
    assert f"--profile dev --no-mutants --examples 3 --timeout {TIMEOUT}" in hung["replay"]
    # The properties after it ran in a fresh worker (the hang was once) and passed.
    assert {key for key, o in outcomes.items() if o["status"] != "pass"} == {"c_vjp"}


def test_after_the_crash_and_the_hang_the_shared_worker_is_started_again_for_the_rest(
    hostile_run,
):
    """The four opted-in ports and jax_checkpoint are one job: segv_port's crash and
    hang_port's hang each end its worker, and the ports after them still run, in one worker."""
    _, report = hostile_run
    printed = {p["name"]: p["output"] for p in report["ports"]}
    (noisy,) = set(re.findall(r"noisy_port: hello from print \(pid (\d+)\)", printed["noisy_port"]))
    (vague,) = set(re.findall(r"vague_port: pid (\d+)", printed["vague_port"]))
    assert noisy == vague
    assert {o["status"] for o in outcomes_of(report, "noisy_port").values()} == {"pass"}


def test_the_noisy_port_passes_and_its_output_is_kept_with_it(hostile_run):
    _, report = hostile_run
    outcomes = outcomes_of(report, "noisy_port")
    assert {o["status"] for o in outcomes.values()} == {"pass"}, outcomes
    (port,) = [p for p in report["ports"] if p["name"] == "noisy_port"]
    for where in ("print", "fd 1", "fd 2"):
        assert f"noisy_port: hello from {where}" in port["output"]


def test_the_vague_port_fails_on_bad_inputs_only(hostile_run):
    _, report = hostile_run
    outcomes = outcomes_of(report, "vague_port")
    failed = {key for key, o in outcomes.items() if o["status"] != "pass"}
    assert failed == {"g_bad_inputs"}
    assert "does not name 'x'" in outcomes["g_bad_inputs"]["message"]
