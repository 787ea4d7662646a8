"""What the multi-node tests of the sharded ports share: probes run at once, faults, leftovers.

The ports run on several nodes (torch) or processes (JAX) of this machine with
`REMAT_SCALE_NODES=2`. Their probes (`tests/support/fsdp_probe.py`, `tests/support/spmd_probe.py`)
print
who ran where (`roster`: every member's pid, parent and node, the launchers the port
started and their process trees) and what failed (`failure`); the tests
(`tests/support/multinode_kit.py`) kill or stop a node from the outside and check, pid by pid, that
nothing is left. torchrun starts its ranks in sessions of their
own, so a process group says nothing: every pid is checked, and whatever a test started
is SIGCONTed and SIGKILLed at its end whatever happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from implementations.rank_pool import RankFailure, descendants, running
from tests.support.helpers import ROOT

SCALE_DOC = ROOT / "docs" / "SCALE.md"
#: The multi-node setting, and the smaller world the tests use (one torch rank per node).
TWO_NODES = {"REMAT_SCALE_NODES": "2", "REMAT_FSDP_RANKS": "1", "REMAT_SPMD_DEVICES": "4"}
#: Appended to docs/SCALE.md's two-host commands: the forward and the checkpoint's evidence,
#: 3 examples each, which show the documented cluster forms, computes and ends (every
#: property over two nodes is test_scale_profile's two-node run).
DOCUMENTED_RUN = " --examples 3 --property b --property e --json"


# -- in a probe: what it prints -----------------------------------------------------------------


def roster(pool, index: str, **ports: object) -> dict:
    """Who runs where: every member of the port's pool (its number as `index`, "rank" or
    "process"; pid, parent, node, host, whether this process owns it), the launchers this
    process started (another node's) with their process trees, the pool's ports (the
    controller's address and `ports`), and every pid of them (`everything`)."""
    launchers = {name: p.pid for name, p in pool.launchers.items()}
    trees = {pid: sorted(descendants(pid)) for pid in launchers.values()}
    return {
        "members": [
            {index: m.index, "pid": m.pid, "parent": m.parent, "node": m.node,
             "host": m.host, "owned": m.owned}
            for _, m in sorted(pool.members.items())
        ],
        "launchers": launchers,
        "trees": trees,
        "ports": {"controller": list(pool.listener.address), **ports},
        "everything": sorted(
            {m.pid for m in pool.members.values()} | set(launchers.values())
            | {pid for tree in trees.values() for pid in tree}
        ),
    }  # fmt: skip


def say(seen: dict) -> None:
    """Print `seen` as a JSON line now: the test reads it while the probe goes on."""
    sys.stdout.write(json.dumps(seen) + "\n")
    sys.stdout.flush()


def failure(call: Callable[[], object]) -> dict:
    """`call()`, for a test to fault a node in the middle of: `{"error": its `RankFailure`'s
    message ("" if it ended well), "seconds": how long it took}`."""
    started = time.monotonic()
    try:
        call()
        error = ""
    except RankFailure as failed:
        error = str(failed)
    return {"error": error, "seconds": time.monotonic() - started}


def mutant_ranks(mutant: str, params, x) -> str:
    """The per-rank half of (e) on the port of `mutant` (its checkpoint dropped), on the
    ranks of this process's port: the `ConformanceError`'s message, or "passed"."""
    from conformance.checking.checks import ConformanceError
    from conformance.checking.properties.e_evidence import _check_ranks
    from conformance.mutants import load as load_mutant

    try:
        _check_ranks(load_mutant(mutant).port, params, x)
    except ConformanceError as error:
        return str(error)
    return "passed"


# -- in a test: probes, faults, leftovers ---------------------------------------------------------


def environment(**extra: str) -> dict[str, str]:
    env = {**os.environ, **TWO_NODES, **extra}
    env.pop("XLA_FLAGS", None)  # the JAX port forces its own devices
    return env


def probes(module: str, mode: str, count: int, **extra: str) -> list[dict]:
    """`count` probes at once (their ports must not collide), each's last JSON line."""
    command = [sys.executable, "-m", module, mode]
    started = [
        subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment(**extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for _ in range(count)
    ]
    found = []
    try:
        for process in started:
            out, err = process.communicate(timeout=600)
            assert process.returncode == 0, err[-3000:]
            found.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for process in started:
            end_tree(process.pid)
    return found


def fault(module: str, victim: str, sign: signal.Signals, **extra) -> dict:
    """Run the probe's `fault` mode (a long call), then `sign` the launcher named `victim`
    (`"torchrun 1"`, `"process 1"`) and every process it started, once they compute the
    call. The probe's result, with `roster`, `victims`, `faulted_at` (time.time())."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, "fault"], cwd=ROOT, env=environment(**extra),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    victims: list[int] = []
    try:
        first = json.loads(process.stdout.readline())
        launcher = first["roster"]["launchers"][victim]
        victims = [launcher, *first["roster"]["trees"][str(launcher)]]
        computing(victims)
        faulted_at = time.time()
        for pid in victims:
            os.kill(pid, sign)
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]
        seen = json.loads(out.strip().splitlines()[-1])
        seen.update(victims=victims, faulted_at=faulted_at, stderr=err)
        return seen
    finally:
        end_tree(process.pid, victims)


def kill_controller(module: str, temporary: Path) -> tuple[dict, float]:
    """Start the probe's `serve` mode (the port up, then idle), SIGKILL the probe alone (the
    port's process: the controller), and wait up to 30 s for every process it started to
    end by itself. (The roster, the seconds the last one took.) `temporary` is its TMPDIR:
    what a killed controller cannot remove stays there."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, "serve"], cwd=ROOT, env=environment(TMPDIR=str(temporary)),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    everything: list[int] = []
    try:
        seen = json.loads(process.stdout.readline())
        everything = seen["roster"]["everything"]
        assert len(alive(everything)) == len(everything)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        killed = time.monotonic()
        still_alive(everything)
        return seen, time.monotonic() - killed
    finally:
        end_tree(process.pid, everything)


def computing(pids, seconds: float = 0.5, within: float = 300.0) -> None:
    """Return once `pids` have used `seconds` more CPU time than now: the call they were sent
    is under way (a fixed sleep would be a guess, too short on a loaded machine)."""
    start, deadline = cpu_seconds(pids), time.monotonic() + within
    while cpu_seconds(pids) - start < seconds:
        assert time.monotonic() < deadline, f"{pids} computed nothing in {within:.0f} s"
        time.sleep(0.05)


def cpu_seconds(pids) -> float:
    """The CPU time the living `pids` have used, threads included (Linux's /proc)."""
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError):
            with open(f"/proc/{pid}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def end_tree(pid: int, also=()) -> None:
    """SIGCONT and SIGKILL a process, everything below it and `also` (stopped ones too)."""
    for each in {pid, *descendants(pid), *also}:
        with contextlib.suppress(OSError):
            os.kill(each, signal.SIGCONT)
            os.kill(each, signal.SIGKILL)
    with contextlib.suppress(OSError, ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def alive(pids) -> list[int]:
    return running(pids)


def still_alive(pids, within: float = 30.0) -> list[int]:
    """The pids alive once all have ended, or after `within` seconds: waited for, since a
    process ends a moment after it is killed or told to stop (longer on a loaded machine)."""
    deadline = time.monotonic() + within
    while running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return running(pids)


def free_port() -> int:
    """A port free now (bound, read, closed): for the commands a user runs with fixed ports."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def documented(title: str) -> dict[str, str]:
    """The commands of the docs/SCALE.md shell block whose first line is `# {title}...`:
    each command (continuation lines joined) under the comment that precedes it, keyed by
    that comment's first words up to a colon or a parenthesis."""
    blocks = re.findall(r"```sh\n(.*?)```", SCALE_DOC.read_text(), re.S)
    (block,) = [b for b in blocks if b.startswith(f"# {title}")]
    commands: dict[str, str] = {}
    key = ""
    for line in block.replace("\\\n", " ").splitlines():
        if line.startswith("#"):
            key = re.split(r"[:(]", line[1:], maxsplit=1)[0].strip()
        elif line.strip():
            commands[key] = " ".join(line.split())
    return commands


def shell_environment(**extra: str) -> dict[str, str]:
    """The environment a documented command runs in: this interpreter first on PATH (as
    `python`, with its `torchrun`), this source tree importable, no forced devices."""
    env = {**os.environ, **extra}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    for name in (*TWO_NODES, "XLA_FLAGS"):
        env.pop(name, None)
    return env
