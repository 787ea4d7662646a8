"""The controller of N FSDP2 ranks, started by torch's own launcher. Imports torch only.

`RankPool(n)` starts `fsdp_rank.rank_main` in n processes with
`torch.distributed.launcher.api.elastic_launch` (torchrun's machinery: a
c10d rendezvous on localhost, `RANK`/`WORLD_SIZE`/`MASTER_*` set per rank,
no restarts), in a thread of this process, and listens for the ranks on a
localhost socket with a random key. `ask(request)` sends one request to
every rank and waits for all the answers.

**Owned processes.** The ranks are children of this process (the launcher's
agent runs here), in its process group, so a worker stopped with its group
takes them along; each rank also exits when its parent or its connection
goes. A rank that dies, raises or does not answer within `REMAT_RANK_TIMEOUT`
seconds (default 100, under the suite's 120 s `--timeout`) is reported by
rank number (`RankFailure`), and the pool is ended: every rank killed, the
launcher's thread joined. The next request starts a fresh pool.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import time
import uuid
from multiprocessing.connection import Connection, Listener, wait
from typing import Any

from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.launcher.api import LaunchConfig, elastic_launch

from .fsdp_rank import rank_main

TIMEOUT_VARIABLE = "REMAT_RANK_TIMEOUT"
START_SECONDS = 300.0  # imports and the rendezvous, on a loaded machine


class RankFailure(RuntimeError):
    """A rank died, raised or hung; the message names it."""


class RankPool:
    """N ranks, started now, answering `ask` until `close`."""

    def __init__(self, ranks: int):
        self.ranks = ranks
        self.timeout = _timeout()
        nodes, host, port, authkey, endpoint = _multi_node()
        self.ranks = ranks * nodes  # every node starts `ranks` processes
        self.listener = Listener((host, port), authkey=authkey)
        self.failure: str | None = None
        self.connections: dict[int, Connection] = {}
        self.pids: dict[int, int] = {}
        config = LaunchConfig(
            min_nodes=nodes,
            max_nodes=nodes,
            nproc_per_node=ranks,
            run_id=os.environ.get("REMAT_FSDP_RUN_ID") or f"remat-fsdp-{uuid.uuid4().hex[:8]}",
            rdzv_backend="c10d",
            # One node: as `torchrun --standalone`, a free port here. More: the endpoint the
            # other nodes' `torchrun --rdzv-endpoint` names too (docs/SCALE.md).
            rdzv_endpoint=endpoint,
            max_restarts=0,
            monitor_interval=0.1,
            start_method="spawn",
        )
        launch = elastic_launch(config, rank_main)
        self.thread = threading.Thread(
            target=self._launch, args=(launch, self.listener.address, authkey), daemon=True
        )
        self.thread.start()
        self._accept()

    def _launch(self, launch, address, authkey) -> None:
        try:
            launch(address, authkey)
        except ChildFailedError as error:
            ranks = sorted(error.failures)
            self.failure = "; ".join(f"rank {r} {_how(error.failures[r].exitcode)}" for r in ranks)
        except BaseException as error:  # the launcher itself failed
            self.failure = f"the launcher failed: {type(error).__name__}: {error}"

    def _accept(self) -> None:
        # `Listener.accept` blocks: its socket gets a deadline, checked between ranks.
        deadline = time.monotonic() + START_SECONDS
        sock = self.listener._listener._socket  # the only way to time accept
        while len(self.connections) < self.ranks:
            sock.settimeout(0.5)
            try:
                connection = self.listener.accept()
            except (TimeoutError, OSError):  # no rank yet: see whether they can still come
                if self.failure or not self.thread.is_alive():
                    self.close()
                    raise RankFailure(
                        f"the ranks did not start: {self.failure or 'exited'}"
                    ) from None
                if time.monotonic() > deadline:
                    self.close()
                    raise RankFailure(
                        f"the ranks did not start within {START_SECONDS:.0f} s"
                    ) from None
                continue
            _, rank, pid = connection.recv()
            self.connections[rank], self.pids[rank] = connection, pid

    def ask(self, request: tuple) -> list[Any]:
        """Send `request` to every rank; their answers, by rank. Raises `RankFailure`."""
        for rank, connection in self.connections.items():
            try:
                connection.send(request)
            except OSError:
                self._fail(f"rank {rank} is gone ({self._death(rank)})")
        answers: dict[int, Any] = {}
        deadline = time.monotonic() + self.timeout
        while len(answers) < self.ranks:
            waiting = {c: r for r, c in self.connections.items() if r not in answers}
            ready = wait(list(waiting), timeout=min(1.0, max(0.0, deadline - time.monotonic())))
            for connection in ready:
                rank = waiting[connection]
                try:
                    status, value = connection.recv()
                except (EOFError, OSError):
                    self._fail(f"rank {rank} died ({self._death(rank)})")
                if status == "raised":
                    self._fail(f"rank {rank} raised {value}")
                answers[rank] = value
            if not ready and time.monotonic() > deadline:
                late = sorted(set(self.connections) - set(answers))
                self._fail(
                    f"rank(s) {', '.join(map(str, late))} did not answer within "
                    f"{self.timeout:.0f} s ({TIMEOUT_VARIABLE})"
                )
        return [answers[r] for r in range(self.ranks)]

    def _death(self, rank: int) -> str:
        self.thread.join(timeout=5)  # the launcher notices a dead rank within its interval
        return self.failure or "its connection closed"

    def _fail(self, message: str) -> None:
        self.close()
        raise RankFailure(f"FSDP over {self.ranks} gloo ranks: {message}")

    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and self.failure is None

    def close(self) -> None:
        """Stop every rank (asked, then killed), and the launcher's thread with them."""
        for connection in self.connections.values():
            with contextlib.suppress(OSError):
                connection.send(("stop",))
        self.thread.join(timeout=10)
        for pid in self.pids.values():  # still there after the grace: killed
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.thread.join(timeout=10)
        for connection in self.connections.values():
            connection.close()
        self.listener.close()


def _multi_node() -> tuple[int, str, int, bytes, str]:
    """(nodes, controller host, controller port, key, rendezvous endpoint) from the
    environment: one node on localhost by default; for more, `REMAT_FSDP_NNODES`,
    `REMAT_FSDP_RDZV_ENDPOINT` (host:port), `REMAT_FSDP_CONTROLLER` (host:port the ranks
    connect to) and `REMAT_FSDP_AUTHKEY` (hex), as docs/SCALE.md says."""
    setting = os.environ.get("REMAT_FSDP_NNODES", "").strip() or "1"
    if not setting.isdigit() or int(setting) < 1:
        raise ValueError(f"REMAT_FSDP_NNODES must be a positive integer, got {setting!r}")
    nodes = int(setting)
    if nodes == 1:
        return 1, "127.0.0.1", 0, secrets.token_bytes(32), "127.0.0.1:0"
    named = {}
    for name in ("REMAT_FSDP_RDZV_ENDPOINT", "REMAT_FSDP_CONTROLLER", "REMAT_FSDP_AUTHKEY"):
        named[name] = os.environ.get(name, "").strip()
        if not named[name]:
            raise ValueError(f"{name} must be set when REMAT_FSDP_NNODES is {nodes}")
    host, _, port = named["REMAT_FSDP_CONTROLLER"].rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"REMAT_FSDP_CONTROLLER must be host:port, got {host}:{port}")
    try:
        authkey = bytes.fromhex(named["REMAT_FSDP_AUTHKEY"])
    except ValueError:
        raise ValueError("REMAT_FSDP_AUTHKEY must be hexadecimal") from None
    return nodes, host, int(port), authkey, named["REMAT_FSDP_RDZV_ENDPOINT"]


def _timeout() -> float:
    setting = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not setting:
        return 100.0
    try:
        value = float(setting)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(
            f"{TIMEOUT_VARIABLE} must be a positive number of seconds, got {setting!r}"
        )
    return value


def _how(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"
