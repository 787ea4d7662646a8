"""The hostile ports: external ports, each the plain JAX port with one habit real ports have.

A native crash, a call that never returns, prints, vague errors, a slow first compile, a
spin, a port stuck loading, a failure in a framework's cache, and a canonical port that
dies. `write_hostile_ports` writes them as an installed distribution; the tests of
tests/core/running/test_hostile_*.py (and test_cache_faults.py there) run the suite on them, each
file a run of its own (so that the two xdist workers can take them side by side).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conformance.running.suite import SHARED_WORKERS
from tests.support.helpers import make_distribution

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
    marks it), so one property waits the timeout out and the rest pass. It hangs in
    `differentiable`, which vjp's first call per shape traces (an own vjp is refused)."""

    name = "hang_port"

    def differentiable(self, params, x, checkpoint):
        once = os.environ.get("HANG_ONCE")
        if once is None or not os.path.exists(once):
            if once is not None:
                open(once, "w").close()
            time.sleep(3600)
        return super().differentiable(params, x, checkpoint)


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


class CacheFaultPort(JaxCheckpoint):
    """Its first forward fails on a file in inductor's cache, as a damaged entry makes a
    compile fail; then it is the JAX port."""

    name = "cache_fault_port"
    first_done = False

    def forward(self, params, x, *, checkpoint=True):
        if not CacheFaultPort.first_done:
            CacheFaultPort.first_done = True
            damaged = os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "ab", "damaged.so")
            raise OSError(f"{damaged}: invalid ELF header")
        return super().forward(params, x, checkpoint=checkpoint)


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
    "cache_fault_port": "hostile:CacheFaultPort",
}
#: Opted in to JAX's worker (`remat_conformance.workers`), as a package's JAX ports may: the
#: run below has them share one worker with `jax_checkpoint`, which the crash and the hang
#: end; the worker is started again for the ports after them.
SHARE_JAX_WORKER = ("segv_port", "hang_port", "noisy_port", "vague_port")
# The hang waits it out once (HANG_ONCE) in the shared worker. A worker that loads or
# computes is never stopped by it (progress is CPU time or a message).
TIMEOUT = "4"
# For the slow compile: a small timeout, and a first forward that computes for over two,
# with a compute timeout well past it (the spinning port computes until then: the test waits
# that long). 2 s was too small: under load (two test runs at once) the spinning port once
# had no b_forward outcome.
SHORT_TIMEOUT = "3"
COMPILE_SECONDS = 7.0
COMPUTE_TIMEOUT = "16"
# Loading is judged against its own timeout: with the example's 3 s, a loaded machine
# stalling an import on the disk for 2 s once had compiling_port declared hung.
LOAD_TIMEOUT = "12"


def write_hostile_ports(root: Path) -> Path:
    """The hostile ports as a distribution in `root`; returns it for `PYTHONPATH`."""
    pytest.importorskip("flax")  # the canonical port
    source = HOSTILE.replace("COMPILE_SECONDS", repr(COMPILE_SECONDS))
    groups = {SHARED_WORKERS: dict.fromkeys(SHARE_JAX_WORKER, "jax")}
    return make_distribution(root, "hostile-ports", PORTS, {"hostile.py": source}, groups)


def run_json(done: subprocess.CompletedProcess) -> dict:
    """The run's stdout as one JSON document, or the test fails showing it."""
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"stdout is not one JSON document (exit {done.returncode}):\n{done.stdout}")


def outcomes_of(report: dict, name: str) -> dict[str, dict]:
    """Port `name`'s outcomes by property, or the test fails saying why it has none. A (k)
    skipped because the port declares no composition case (an (l) with no stateful block) is
    left out (it says so itself:
    tests/core/implementations/test_composition_rules.py), so that "every property passed" reads
    the rest."""
    (port,) = [p for p in report["ports"] if p["name"] == name]
    outcomes = {o["property"]: o for o in port["outcomes"]}
    if not outcomes:  # say why, rather than a KeyError later
        pytest.fail(f"{name}: no outcomes, state {port['state']}: {port.get('reason')}\n"
                    f"{port.get('output', '')[-2000:]}")  # fmt: skip
    for key in ("k_composition", "l_state"):  # (l) likewise, for a port with no stateful block
        found = outcomes.get(key)
        if found and found["status"] == "skip" and found["message"].startswith("not expressible: "):
            del outcomes[key]
    return outcomes
