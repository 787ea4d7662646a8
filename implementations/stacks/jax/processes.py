"""The controller of `jax_spmd`'s JAX processes, when it runs on several. Imports the
standard library only: the controller's process (the suite's worker) holds no mesh.

JAX is multi-controller: every process runs the same programs, in the same
order, and a program on the global mesh that one process runs alone hangs
it. So the port's process does not compute: `ProcessPool(processes, devices)`
starts the JAX processes (`spmd_process`, each with `devices / processes`
forced host devices and `jax.distributed.initialize`), and every call the
port answers is sent to all of them (`implementations.rank_pool`): they run
it in lockstep, gather results with `multihost_utils.process_allgather`,
and each measures its own devices. A process that dies, raises or hangs
fails the call with a `RankFailure` naming it; the processes are killed
(before JAX's heartbeat would abort the others) and the next call starts a
fresh pair.

**Where** (`process_count()`, docs/SCALE.md):

- `REMAT_SCALE_NODES=2` (the scale profile's setting): every process on this
  machine, started here. The coordinator's port is picked here and held
  (`reserve_port`) until every process has initialized, so that two runs at
  once cannot take the same one (a coordinator that cannot bind its port
  crashes the process); the controller's listener binds port 0.
- `REMAT_JAX_PROCESSES=2` with `REMAT_JAX_COORDINATOR`, `REMAT_JAX_CONTROLLER`
  and `REMAT_JAX_AUTHKEY`: a cluster. Process 0 is started here; a user
  starts the others on their hosts with the same command (`member_command`).
"""

from __future__ import annotations

import atexit
import os
import secrets
import socket

from ...rank_pool import RankController, hex_key, host_port, python
from ...sharding import rank_count, scale_nodes

PROCESSES_VARIABLE = "REMAT_JAX_PROCESSES"
COORDINATOR_VARIABLE = "REMAT_JAX_COORDINATOR"
CONTROLLER_VARIABLE = "REMAT_JAX_CONTROLLER"
AUTHKEY_VARIABLE = "REMAT_JAX_AUTHKEY"
#: Where process 0's coordination service binds (default: the coordinator's address).
BIND_VARIABLE = "REMAT_JAX_BIND_ADDRESS"
#: Set by `spmd_process` in a JAX process before it imports the port: what to initialize.
MEMBER_VARIABLE = "REMAT_JAX_MEMBER"

#: The live processes, by (processes, devices), shared by the port and its mutants.
_POOLS: dict[tuple[int, int], ProcessPool] = {}


def cluster() -> bool:
    """Whether a user named the coordinator (processes on other hosts)."""
    return bool(os.environ.get(COORDINATOR_VARIABLE, "").strip())


def process_count() -> int:
    """The JAX processes: `REMAT_JAX_PROCESSES` on a cluster (`REMAT_JAX_COORDINATOR` set),
    else the scale profile's `REMAT_SCALE_NODES` (processes on this machine), else 1."""
    return rank_count(PROCESSES_VARIABLE, 1) if cluster() else scale_nodes()


def member_command(
    processes: int, process_id: int, devices: int, coordinator: str, controller: str
) -> list[str]:
    """The command that starts JAX process `process_id` (docs/SCALE.md's, as this machine's
    `REMAT_SCALE_NODES` runs it)."""
    return [
        python(), "-m", "implementations.stacks.jax.spmd_process",
        "--processes", str(processes), "--process-id", str(process_id),
        "--devices", str(devices), "--coordinator", coordinator, "--controller", controller,
    ]  # fmt: skip


def reserve_port(host: str) -> socket.socket:
    """A socket bound to a free port of `host` with `SO_REUSEPORT`, not listening: no
    other program gets the port while it is held, but the coordination service (gRPC, which
    sets `SO_REUSEPORT` too) can bind it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, 0))
    return sock


class ProcessPool(RankController):
    """`processes` JAX processes sharing `devices` host devices, answering `ask`."""

    def __init__(self, processes: int, devices: int):
        held = None
        if cluster():
            coordinator = os.environ[COORDINATOR_VARIABLE].strip()
            host_port(COORDINATOR_VARIABLE, coordinator)
            setting = os.environ.get(CONTROLLER_VARIABLE, "")
            if not setting.strip():
                raise ValueError(f"{CONTROLLER_VARIABLE} must be set with {COORDINATOR_VARIABLE}")
            address, authkey = host_port(CONTROLLER_VARIABLE, setting), hex_key(AUTHKEY_VARIABLE)
        else:
            held = reserve_port("127.0.0.1")
            coordinator = f"127.0.0.1:{held.getsockname()[1]}"
            address, authkey = ("127.0.0.1", 0), secrets.token_bytes(32)
        self.coordinator = coordinator  # process 0's coordination service
        what = f"JAX SPMD over {devices} devices in {processes} processes"
        try:
            super().__init__(processes, address, authkey, what, "process")
            controller = f"{self.listener.address[0]}:{self.listener.address[1]}"
            for index in range(1 if held is None else processes):
                command = member_command(processes, index, devices, coordinator, controller)
                self.start_process(f"process {index}", command, {AUTHKEY_VARIABLE: authkey.hex()})
            self.accept()  # every process has initialized: the coordinator holds its port
        finally:
            if held is not None:
                held.close()


def pool(processes: int, devices: int) -> ProcessPool:
    """The live processes for this setting, started on first use (and after a failure)."""
    found = _POOLS.get((processes, devices))
    if found is None or not found.alive:
        if found is not None:
            found.close()
        found = _POOLS[processes, devices] = ProcessPool(processes, devices)
        atexit.register(found.close)
    return found


def close() -> None:
    """Stop every pool's processes (they stop with this process anyway)."""
    while _POOLS:
        _POOLS.popitem()[1].close()
