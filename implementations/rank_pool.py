"""The controller of a sharded port's member processes. Imports the standard library
(and `environment` and `signals`, which import it only).

A sharded port computes in processes of its own, its **members**:
`torch_fsdp`'s gloo ranks (`implementations.stacks.torch.ranks`),
`jax_spmd`'s `jax.distributed` processes when it runs on several
(`implementations.stacks.jax.processes`). They may run on this machine or
on other nodes. `RankController` is what the port's process (the suite's
worker) keeps of them: a listener they connect to with a key, one
connection per member, and

- `ask(request)`: one request to every member, every answer back, in
  member order; a member that dies, raises or does not answer within
  `REMAT_RANK_TIMEOUT` seconds (default 100, under the suite's 120 s
  `--timeout`) fails the call with a `RankFailure` that names it, its node
  and its process, and the pool is ended (the port starts a fresh one on
  its next call);
- `close()`: every member asked to stop; the owned ones still running after a
  grace are killed.

A member connects and says `("ready", index, info)`, `info` a dict with
`pid`, `parent` (its parent's pid), `host`, `node` (`"node 1"`,
`"process 1"`) and `owner`.

**Owned processes.** The controller gives the processes it starts (a
subclass's launchers, `start_process`, and what they start) a random token
in `REMAT_RANK_OWNER`, and members echo it: only members with this
controller's token are its to kill. Another node's members (a `torchrun`
or a JAX process a user started on another machine) are not: their pids
name another machine's processes, and they end when their connection
closes. Launchers started here are in this process's group, so that a
worker stopped with its group (the suite's `--timeout`, Ctrl-C) takes them
along, and each member also exits when its parent goes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, Listener, wait
from pathlib import Path
from typing import Any

from .environment import positive_seconds
from .signals import signal_name

TIMEOUT_VARIABLE = "REMAT_RANK_TIMEOUT"
#: The controller's token, in the environment of the processes it starts (see the module).
OWNER_VARIABLE = "REMAT_RANK_OWNER"
START_SECONDS = 300.0  # imports and the rendezvous, on a loaded machine
STOP_SECONDS = 10.0  # a stopped member's grace before it is killed
#: After a member raised: how long to look for a death that caused it (a peer's collective
#: fails when a rank dies, and the death is what to report).
CAUSE_SECONDS = 1.0
#: The directory that holds the `implementations` package: on `PYTHONPATH` of the processes
#: a controller starts, so that they run this code.
SOURCE_ROOT = str(Path(__file__).resolve().parents[1])


class RankFailure(RuntimeError):
    """A member died, raised or hung; the message names it, its node and its process."""


@dataclass
class Member:
    """One member, as it announced itself."""

    index: int
    connection: Connection
    pid: int
    parent: int
    host: str
    node: str
    owned: bool


class RankController:
    """Members answering `ask` until `close`. A subclass starts them, then calls `accept`.

    **Arguments:** `world` (the members expected), `address` and `authkey` (where and with
    what key they connect; port 0 picks a free one), `what` (the pool in a few words, the
    start of every failure's message), `unit` (what a member is called: `"rank"`).
    """

    def __init__(self, world: int, address: tuple[str, int], authkey: bytes, what: str, unit: str):
        self.world, self.what, self.unit = world, what, unit
        self.timeout = timeout()
        self.authkey = authkey
        self.listener = Listener(address, authkey=authkey)
        self.owner = secrets.token_hex(8)
        self.members: dict[int, Member] = {}
        self.launchers: dict[str, subprocess.Popen] = {}
        self.closed = False

    # -- what a subclass may refine -------------------------------------------------------

    def launch_failure(self) -> str | None:
        """Why the members cannot all come any more (a launcher ended), else None."""
        for name, process in self.launchers.items():
            if process.poll() is not None:
                return f"{name} (pid {process.pid}) {how(process.returncode)}"
        return None

    def death(self, member: Member) -> str:
        """How `member`, whose connection closed, ended: its launcher's word if it had one
        here, else that it ran elsewhere."""
        if not member.owned:
            return "its connection closed; it ran on another machine, not this one's to watch"
        deadline = time.monotonic() + 2.0  # the kernel's word on a child takes a moment
        while True:
            for name, process in self.launchers.items():
                if process.pid in (member.pid, member.parent) and process.poll() is not None:
                    whose = "it" if process.pid == member.pid else f"its launcher, {name},"
                    return f"its connection closed: {whose} {how(process.returncode)}"
            if time.monotonic() > deadline:
                return f"its connection closed ({state(member.pid)})"
            time.sleep(0.05)

    def stopped(self) -> None:
        """Called once `close` is done with the members (a launcher's thread to join)."""

    @property
    def alive(self) -> bool:
        return not self.closed and self.launch_failure() is None

    # -- starting -------------------------------------------------------------------------

    def start_process(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        """Start a launcher (`name` in messages): in this process's group, with this
        controller's token and this source tree on `PYTHONPATH`."""
        path = [SOURCE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = {
            **os.environ,
            **env,
            OWNER_VARIABLE: self.owner,
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(path)),
        }
        self.launchers[name] = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)

    def accept(self) -> None:
        """Wait for every member to connect (`START_SECONDS`), or fail naming why not."""
        deadline = time.monotonic() + START_SECONDS
        sock = self.listener._listener._socket  # the only way to time `accept`
        while len(self.members) < self.world:
            sock.settimeout(0.5)
            try:
                connection = self.listener.accept()
            except (TimeoutError, OSError):  # none yet: see whether they can still come
                failure = self.launch_failure()
                if failure:
                    self._fail(f"the {self.unit}s did not start: {failure}")
                if time.monotonic() > deadline:
                    self._fail(f"the {self.unit}s did not start within {START_SECONDS:.0f} s")
                continue
            _, index, info = connection.recv()
            self.members[index] = Member(
                index, connection, info["pid"], info.get("parent", 0), info.get("host", "?"),
                info.get("node", ""), info.get("owner") == self.owner,
            )  # fmt: skip
        # Where every member runs, on the port's stderr (the suite keeps a worker's output).
        roster = ", ".join(self.name(m) for _, m in sorted(self.members.items()))
        started = ", ".join(f"{name} (pid {p.pid})" for name, p in self.launchers.items())
        print(
            f"{self.what}: {roster}" + (f"; started here: {started}" if started else ""),
            file=sys.stderr,
            flush=True,
        )

    # -- asking ---------------------------------------------------------------------------

    def name(self, member: Member) -> str:
        """The member in words: `rank 2 on node 1 (pid 4711 on host)`."""
        named = f"{self.unit} {member.index}"
        where = f" on {member.node}" if member.node not in ("", named) else ""
        return f"{named}{where} (pid {member.pid} on {member.host})"

    def ask(self, request: tuple, only: int | None = None) -> list[Any]:
        """Send `request` to every member (or to member `only`); their answers, in member
        order. Raises `RankFailure` naming the member that died, raised or hung."""
        asked = [m for i, m in sorted(self.members.items()) if only in (None, i)]
        for member in asked:
            try:
                member.connection.send(request)
            except OSError:
                self._fail(f"{self.name(member)} is gone ({self.death(member)})")
        answers: dict[int, Any] = {}
        deadline = time.monotonic() + self.timeout
        while len(answers) < len(asked):
            waiting = {m.connection: m for m in asked if m.index not in answers}
            left = max(0.0, deadline - time.monotonic())
            for connection in wait(list(waiting), timeout=min(1.0, left)):
                member = waiting[connection]
                try:
                    status, value = connection.recv()
                except (EOFError, OSError):
                    self._fail(f"{self.name(member)} died ({self.death(member)})")
                if status == "raised":
                    self._fail(self._cause(member, value, asked, answers))
                answers[member.index] = value
            if time.monotonic() > deadline and len(answers) < len(asked):
                late = [m for m in asked if m.index not in answers]
                units = self.unit if len(late) == 1 else plural(self.unit)
                self._fail(
                    f"{units} {', '.join(str(m.index) for m in late)} did not answer "
                    f"within {self.timeout:.0f} s ({TIMEOUT_VARIABLE}): "
                    + "; ".join(self._late(m) for m in late),
                    grace=0.0,  # no answer is coming: no grace
                )
        return [answers[m.index] for m in asked]

    def _cause(self, member: Member, error: str, asked: list[Member], answers: dict) -> str:
        """What to report when `member` raised `error`: a peer's death, if one died within
        `CAUSE_SECONDS` (a collective fails on every rank when one dies), else the error."""
        others = {m.connection: m for m in asked if m is not member and m.index not in answers}
        deadline = time.monotonic() + CAUSE_SECONDS
        while others and time.monotonic() < deadline:
            for connection in wait(list(others), timeout=max(0.0, deadline - time.monotonic())):
                peer = others.pop(connection)
                try:
                    connection.recv()
                except (EOFError, OSError):
                    return (
                        f"{self.name(peer)} died ({self.death(peer)}); "
                        f"{self.name(member)} then raised {error}"
                    )
        return f"{self.name(member)} raised {error}"

    def _late(self, member: Member) -> str:
        if not member.owned:
            return f"{self.name(member)}, on another machine"
        return f"{self.name(member)}, {state(member.pid)}"

    def _fail(self, message: str, grace: float = CAUSE_SECONDS) -> None:
        self.close(failed=True, grace=grace)
        raise RankFailure(f"{self.what}: {message}")

    # -- stopping -------------------------------------------------------------------------

    def close(self, failed: bool = False, grace: float = CAUSE_SECONDS) -> None:
        """Stop every member: asked; the owned ones still running after a grace
        (`STOP_SECONDS`, or `grace` after a failure: they may be stuck in a collective with a
        dead peer) killed, with every process the launchers started; the launchers reaped."""
        if self.closed:
            return
        self.closed = True
        for member in self.members.values():
            with contextlib.suppress(OSError):
                member.connection.send(("stop",))
        launchers = list(self.launchers.values())
        mine = [m.pid for m in self.members.values() if m.owned]
        deadline = time.monotonic() + (grace if failed else STOP_SECONDS)
        while time.monotonic() < deadline and (
            running(mine) or any(p.poll() is None for p in launchers)
        ):
            time.sleep(0.05)
        doomed = set(running(mine))
        for process in launchers:  # with everything they started (torchrun's ranks too)
            if process.poll() is None:
                doomed |= {process.pid, *descendants(process.pid)}
        for pid in doomed:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for process in launchers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        for member in self.members.values():
            member.connection.close()
        self.listener.close()
        self.stopped()


def timeout() -> float:
    """`REMAT_RANK_TIMEOUT`, checked: the seconds a member may take to answer (default 100)."""
    return positive_seconds(TIMEOUT_VARIABLE) or 100.0


def host_port(variable: str, setting: str) -> tuple[str, int]:
    """`host:port` as a pair, or a `ValueError` naming `variable`."""
    host, _, port = setting.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{variable} must be host:port, got {setting!r}")
    return host, int(port)


def hex_key(variable: str) -> bytes:
    """The key in `variable` (hexadecimal, shared by the controller and the other nodes)."""
    setting = os.environ.get(variable, "").strip()
    if not setting:
        raise ValueError(f"{variable} must be set: the key the other nodes share, in hex")
    try:
        return bytes.fromhex(setting)
    except ValueError:
        raise ValueError(f"{variable} must be hexadecimal") from None


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def running(pids) -> list[int]:
    """The pids that name a running process (a zombie has ended)."""
    return [pid for pid in pids if (fields := _stat(pid)) is not None and fields[0] != "Z"]


def state(pid: int) -> str:
    """A process's state in words: "stopped", "running", "sleeping", "gone"."""
    fields = _stat(pid)
    if fields is None or fields[0] in "ZX":
        return "gone"
    return {"T": "stopped", "t": "stopped", "R": "running", "D": "waiting on the disk"}.get(
        fields[0], "sleeping"
    )


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (by parent pid, however they set their sessions)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def how(code: int | None) -> str:
    """An exit status in words: "was killed by SIGKILL", "exited with code 1"."""
    if code is None:
        return "is still running"
    if code < 0:
        return f"was killed by {signal_name(-code)}"
    return f"exited with code {code}"


def plural(noun: str) -> str:
    """The plural of a member's name: `ranks`, `processes`."""
    return noun + ("es" if noun.endswith("s") else "s")


def python() -> str:
    """This interpreter, for the processes a controller starts."""
    return sys.executable


def watch_parent(interval: float = 0.5) -> None:
    """In a rank or a node's process: exit once its parent (the controller, a launcher's
    agent, or a user's shell) is gone, so that nothing outlives the run."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
