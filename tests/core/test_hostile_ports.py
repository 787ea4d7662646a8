"""The run survives its ports: crashes, hangs, noise and vague errors, under the CLI and pytest.

The hostile ports are external ports (entry points of a package written in a
temp dir), each the plain JAX port with one habit real ports have: a native
crash, a call that never returns, prints, vague errors, and a canonical port
that dies. Four of them opt in to JAX's worker, so the crash and the hang
happen in a worker shared with `jax_checkpoint` and the ports after them.
Every test asserts what the report says about each, and that the good port's
results survive.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conformance.running.suite import SHARED_WORKERS
from tests.helpers import ROOT, make_distribution, run_python

HOSTILE = '''
"""Ports that misbehave as real ports do."""

import ctypes
import os
import re
import time

from implementations.stacks.jax.flax_linen import FlaxLinen
from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint


class SegfaultPort(JaxCheckpoint):
    """forward dies with SIGSEGV, as a broken native extension does."""

    name = "segv_port"

    def forward(self, params, x, *, checkpoint=True):
        print("segv_port: about to read address 0", flush=True)
        ctypes.string_at(0)


class HangingPort(JaxCheckpoint):
    """vjp never returns; with HANG_ONCE naming a file, only the run's first vjp (the file
    marks it), so one property waits the timeout out and the rest pass."""

    name = "hang_port"

    def vjp(self, params, x, cotangent, *, checkpoint=True):
        once = os.environ.get("HANG_ONCE")
        if once is None or not os.path.exists(once):
            if once is not None:
                open(once, "w").close()
            time.sleep(3600)
        return super().vjp(params, x, cotangent, checkpoint=checkpoint)


def _compute_a_little():
    """Compute for 20 ms, then rest for 60: a quarter of a core, as a compiler sharing the
    machine gets. The suite counts a worker computing from 2 % of a core (BUSY_SHARE), so
    this reads as work even on a loaded machine, and costs the test run a quarter of the
    CPU a spin would."""
    end = time.monotonic() + 0.02
    while time.monotonic() < end:
        sum(range(1000))
    time.sleep(0.06)


def _compute(seconds):
    """Compute for `seconds` of wall time, as a compiler does."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        _compute_a_little()


class CompilingPort(JaxCheckpoint):
    """Its first forward computes for longer than the timeout with no message, as a first
    compile under load does (inductor's took minutes); then it is the JAX port."""

    name = "compiling_port"
    first_done = False

    def forward(self, params, x, *, checkpoint=True):
        if not CompilingPort.first_done:
            _compute(COMPILE_SECONDS)
            CompilingPort.first_done = True
        return super().forward(params, x, checkpoint=checkpoint)


class SpinningPort(JaxCheckpoint):
    """forward computes forever: a hang that keeps a core busy."""

    name = "spinning_port"

    def forward(self, params, x, *, checkpoint=True):
        while True:
            _compute_a_little()


class StuckLoadingPort(JaxCheckpoint):
    """Building it never returns, as a port waiting on a lock nobody releases."""

    name = "stuck_loading_port"

    def __init__(self):
        time.sleep(3600)


class NoisyPort(JaxCheckpoint):
    """Right answers, and chatter on stdout and stderr, from Python and from native code."""

    name = "noisy_port"

    def nn_checkpoint_forward(self, seed, x, features):
        print(f"noisy_port: hello from print (pid {os.getpid()})")
        os.write(1, b"noisy_port: hello from fd 1\\n")
        os.write(2, b"noisy_port: hello from fd 2\\n")
        return super().nn_checkpoint_forward(seed, x, features)


class VaguePort(JaxCheckpoint):
    """The right exception types, but a bad x's message names nothing."""

    name = "vague_port"

    def nn_checkpoint_forward(self, seed, x, features):
        print(f"vague_port: pid {os.getpid()}")
        try:
            return super().nn_checkpoint_forward(seed, x, features)
        except (TypeError, ValueError) as error:
            if re.search(r"\\bx\\b", str(error)):
                raise type(error)("expected a valid input") from None
            raise


class DyingCanonical(FlaxLinen):
    """A reference port whose forward ends the process."""

    name = "dying_canonical"

    def forward(self, params, x, *, checkpoint=True):
        os._exit(3)
'''

PORTS = {
    "segv_port": "hostile:SegfaultPort",
    "hang_port": "hostile:HangingPort",
    "noisy_port": "hostile:NoisyPort",
    "vague_port": "hostile:VaguePort",
    "dying_canonical": "hostile:DyingCanonical",
    "compiling_port": "hostile:CompilingPort",
    "spinning_port": "hostile:SpinningPort",
    "stuck_loading_port": "hostile:StuckLoadingPort",
}
#: Opted in to JAX's worker (`remat_conformance.workers`), as a package's JAX ports may: the
#: run below has them share one worker with `jax_checkpoint`, which the crash and the hang
#: end; the worker is started again for the ports after them.
SHARE_JAX_WORKER = ("segv_port", "hang_port", "noisy_port", "vague_port")
# The hang waits it out once (HANG_ONCE) in the shared worker. A worker that loads or
# computes is never stopped by it (progress is CPU time or a message).
TIMEOUT = "4"
# For the slow compile: a small timeout, and a first forward that computes for over three
# (the spinning port computes for ten: the test waits that long). 2 s was too small: under
# load (two test runs at once) the spinning port once had no b_forward outcome.
SHORT_TIMEOUT = "3"
COMPILE_SECONDS = 10.0
# Loading is judged against its own timeout: with the example's 3 s, a loaded machine
# stalling an import on the disk for 2 s once had compiling_port declared hung.
LOAD_TIMEOUT = "20"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    pytest.importorskip("flax")  # the canonical port
    root = tmp_path_factory.mktemp("hostile")
    source = HOSTILE.replace("COMPILE_SECONDS", repr(COMPILE_SECONDS))
    groups = {SHARED_WORKERS: dict.fromkeys(SHARE_JAX_WORKER, "jax")}
    return make_distribution(root, "hostile-ports", PORTS, {"hostile.py": source}, groups)


def _json(done: subprocess.CompletedProcess) -> dict:
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"stdout is not one JSON document (exit {done.returncode}):\n{done.stdout}")


def _outcomes(report: dict, name: str) -> dict[str, dict]:
    (port,) = [p for p in report["ports"] if p["name"] == name]
    outcomes = {o["property"]: o for o in port["outcomes"]}
    if not outcomes:  # say why, rather than a KeyError later
        pytest.fail(f"{name}: no outcomes, state {port['state']}: {port.get('reason')}\n"
                    f"{port.get('output', '')[-2000:]}")  # fmt: skip
    return outcomes


@pytest.fixture(scope="module")
def hostile_run(hostile, tmp_path_factory):
    """One run: the good port and four hostile ones, JSON out; the hang is its first vjp."""
    args = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev"]
    args += ["--examples", "3", "--timeout", TIMEOUT, "--jobs", "2"]
    for name in ("jax_checkpoint", "segv_port", "hang_port", "noisy_port", "vague_port"):
        args += ["--implementation", name]
    once = {"HANG_ONCE": str(tmp_path_factory.mktemp("hang") / "hung")}
    done = run_python(args, hostile, timeout=600, env=once)
    return done, _json(done)


def test_the_run_finishes_fails_and_prints_one_json_document(hostile_run):
    done, report = hostile_run
    assert done.returncode == 1, done.stderr[-3000:]
    assert report["schema"] >= 2
    assert report["failed"] is True
    # The noise reached stdout only inside the JSON, as the port's captured output.
    assert not [line for line in done.stdout.splitlines() if line.startswith("noisy_port")]


def test_the_good_port_keeps_its_results(hostile_run):
    _, report = hostile_run
    outcomes = _outcomes(report, "jax_checkpoint")
    assert {o["status"] for o in outcomes.values()} == {"pass"}, outcomes


def test_the_crash_is_named_and_the_rest_of_the_port_still_runs(hostile_run):
    _, report = hostile_run
    outcomes = _outcomes(report, "segv_port")
    crashed = outcomes["b_forward"]
    assert crashed["status"] == "crashed"
    message = crashed["message"]
    assert "SIGSEGV" in message
    assert "the port's forward" in message
    assert "example: params D=" in message
    assert "segv_port: about to read address 0" in message  # the last lines it printed
    assert "Fatal Python error" in message  # faulthandler's stack of the crash
    assert "--implementation segv_port --property b_forward" in crashed["replay"]
    # Properties that never call forward ran in a fresh worker and passed.
    for key in ("e_evidence", "f_end_to_end", "g_bad_inputs", "h_hygiene"):
        assert outcomes[key]["status"] == "pass", outcomes[key]


def test_the_hang_is_stopped_and_named(hostile_run):
    _, report = hostile_run
    outcomes = _outcomes(report, "hang_port")
    hung = outcomes["c_vjp"]
    assert hung["status"] == "timeout"
    assert f"no progress for {TIMEOUT} s" in hung["message"]
    assert "the port's vjp" in hung["message"]
    # The properties after it ran in a fresh worker (the hang was once) and passed.
    assert {key for key, o in outcomes.items() if o["status"] != "pass"} == {"c_vjp"}


def test_a_slow_first_compile_passes_and_hangs_still_time_out(hostile):
    """Progress is a message or CPU time: a compile computes, a hang sleeps or never ends.
    Loading a port is judged the same way, against --load-timeout."""
    args = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev"]
    args += ["--examples", "3", "--timeout", SHORT_TIMEOUT, "--jobs", "4"]
    args += ["--load-timeout", LOAD_TIMEOUT, "--property", "b", "--property", "c"]
    for name in ("compiling_port", "hang_port", "spinning_port", "stuck_loading_port"):
        args += ["--implementation", name]
    done = run_python(args, hostile, timeout=600)
    report = _json(done)
    compiling = _outcomes(report, "compiling_port")
    # Its first forward sent no message for over three timeouts, computing all along.
    assert compiling["b_forward"]["status"] == "pass", compiling["b_forward"]
    assert compiling["b_forward"]["seconds"] > 3 * float(SHORT_TIMEOUT)
    assert compiling["c_vjp"]["status"] == "pass", compiling["c_vjp"]
    # A sleeping hang is still stopped after the timeout, as before.
    hung = _outcomes(report, "hang_port")["c_vjp"]
    assert hung["status"] == "timeout", hung
    assert f"no progress for {SHORT_TIMEOUT} s" in hung["message"]
    assert "the port's vjp" in hung["message"]
    # A hang that computes is stopped too, at its bound.
    spinning = _outcomes(report, "spinning_port")["b_forward"]
    assert spinning["status"] == "timeout", spinning
    assert "computing all along" in spinning["message"]
    assert f"10 times the {SHORT_TIMEOUT} s timeout" in spinning["message"]
    assert "the port's forward" in spinning["message"]
    # A port stuck while loading is stopped after the load timeout, not the example's.
    (stuck,) = [p for p in report["ports"] if p["name"] == "stuck_loading_port"]
    assert stuck["state"] == "timed out", stuck
    assert stuck["reason"].endswith("while loading the port"), stuck["reason"]
    quiet = re.match(r"no progress for (\d+) s", stuck["reason"])
    assert quiet, stuck["reason"]
    assert int(quiet[1]) >= int(LOAD_TIMEOUT), stuck["reason"]
    assert done.returncode == 1


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
    assert {o["status"] for o in _outcomes(report, "noisy_port").values()} == {"pass"}


def test_the_noisy_port_passes_and_its_output_is_kept_with_it(hostile_run):
    _, report = hostile_run
    outcomes = _outcomes(report, "noisy_port")
    assert {o["status"] for o in outcomes.values()} == {"pass"}, outcomes
    (port,) = [p for p in report["ports"] if p["name"] == "noisy_port"]
    for where in ("print", "fd 1", "fd 2"):
        assert f"noisy_port: hello from {where}" in port["output"]


def test_the_vague_port_fails_on_bad_inputs_only(hostile_run):
    _, report = hostile_run
    outcomes = _outcomes(report, "vague_port")
    failed = {key for key, o in outcomes.items() if o["status"] != "pass"}
    assert failed == {"g_bad_inputs"}
    assert "does not name 'x'" in outcomes["g_bad_inputs"]["message"]


def test_a_crash_of_the_canonical_port_skips_what_needs_it(hostile):
    args = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev"]
    args += ["--examples", "3", "--timeout", TIMEOUT, "--jobs", "1"]
    args += ["--implementation", "jax_checkpoint", "--canonical", "dying_canonical"]
    done = run_python(args, hostile, timeout=600)
    report = _json(done)
    assert done.returncode == 1
    failure = report["canonical_failure"]
    assert "dying_canonical" in failure
    assert "exit code 3" in failure
    assert "the canonical port's forward" in failure
    outcomes = _outcomes(report, "jax_checkpoint")
    for key in ("b_forward", "c_vjp", "f_end_to_end"):
        assert outcomes[key]["status"] == "skip", outcomes[key]
        assert "dying_canonical" in outcomes[key]["message"]
    for key in ("d_on_off", "e_evidence", "g_bad_inputs", "h_hygiene"):
        assert outcomes[key]["status"] == "pass", outcomes[key]


def test_the_text_report_names_the_crash_and_gives_a_replay_command(hostile):
    args = ["-m", "conformance", "--no-mutants", "--profile", "dev", "--examples", "2"]
    args += ["--implementation", "segv_port", "--property", "b", "--timeout", TIMEOUT]
    done = run_python(args, hostile, timeout=600)
    assert done.returncode == 1
    text = " ".join(done.stdout.split())  # rich wraps long lines
    assert "CRASHED segv_port · b_forward" in text
    assert "killed by SIGSEGV" in text
    assert "replay: python -m conformance run --implementation segv_port" in text
    assert "segv_port printed" in text


def test_pytest_keeps_the_other_ports_results(hostile):
    command = ["-m", "pytest", "tests/core/test_conformance.py", "-n", "2", "-rA", "-q"]
    command += ["-p", "no:cacheprovider", "--conformance-timeout", TIMEOUT]
    command += ["--conformance-examples", "3", "-k", "b_forward or c_vjp or h_hygiene"]
    for name in ("jax_checkpoint", "segv_port", "hang_port"):
        command += ["--port", name]
    done = run_python(command, hostile, timeout=900)
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
    for key in ("b_forward", "c_vjp", "h_hygiene"):
        assert status("jax_checkpoint", key) == "PASSED", done.stdout[-3000:]
    assert status("segv_port", "b_forward") == "FAILED"
    assert status("segv_port", "h_hygiene") == "PASSED"
    assert status("hang_port", "c_vjp") == "FAILED"
    assert status("hang_port", "h_hygiene") == "PASSED"
    assert "SIGSEGV" in done.stdout
    assert f"no progress for {TIMEOUT} s" in done.stdout


@pytest.mark.parametrize(
    "blocked",
    # Two collections cover three absences: JAX itself, and torch with JAX's libraries.
    [("jax", "jaxlib"), ("torch", "flax", "equinox")],
    ids=lambda names: "-".join(names),
)
def test_collection_succeeds_with_a_framework_missing(tmp_path, blocked):
    from tests.helpers import without_frameworks

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
