"""The controller of N FSDP2 ranks, started by torch's own launcher. Imports torch only.

`RankPool(ranks_per_node)` starts `fsdp_rank.rank_main` in that many
processes with `torch.distributed.launcher.api.elastic_launch` (torchrun's
machinery: a c10d rendezvous, `RANK`/`WORLD_SIZE`/`MASTER_*` set per rank,
no restarts), in a thread of this process, and listens for the ranks on a
socket with a key (`implementations.rank_pool.RankController`: `ask`,
`close`, the failures that name a rank, its node and its process).

**Nodes** (`node_count()`, docs/SCALE.md). One by default: the rendezvous
on a free localhost port, as `torchrun --standalone`. More:

- `REMAT_SCALE_NODES=2` (the scale profile's setting): this process is
  node 0 and starts the other nodes itself, each a `torchrun` on this
  machine (`torchrun_command`), with free ports picked here: the
  controller's listener and the c10d store bind port 0 and the ports are
  passed on;
- `REMAT_FSDP_NNODES=2` with `REMAT_FSDP_RDZV_ENDPOINT`,
  `REMAT_FSDP_CONTROLLER` and `REMAT_FSDP_AUTHKEY`: a cluster, whose other
  nodes a user starts with that same `torchrun` command. Port 0 in the
  addresses picks free ports here too, written to the file
  `REMAT_FSDP_ANNOUNCE` names (`announce`) for a launcher of the other nodes
  to read.

The world is nodes x ranks per node. The ranks this process's launcher
starts, and on one machine the other nodes' `torchrun` and their ranks, are
its own (`implementations.rank_pool`); a remote node's ranks end when their
connection closes.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from datetime import timedelta

from torch.distributed import TCPStore
from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.launcher.api import LaunchConfig, elastic_launch

from ...rank_pool import (
    START_SECONDS,
    TIMEOUT_VARIABLE,
    RankController,
    RankFailure,
    hex_key,
    host_port,
    how,
    python,
)
from ...sharding import scale_nodes
from .fsdp_rank import rank_main

__all__ = ["TIMEOUT_VARIABLE", "RankFailure", "RankPool", "node_count", "torchrun_command"]

NODES_VARIABLE = "REMAT_FSDP_NNODES"
ANNOUNCE_VARIABLE = "REMAT_FSDP_ANNOUNCE"
AUTHKEY_VARIABLE = "REMAT_FSDP_AUTHKEY"


class RankPool(RankController):
    """`ranks_per_node` ranks on every node, started now, answering `ask` until `close`."""

    def __init__(self, ranks_per_node: int):
        nodes, controller, authkey, endpoint, starts_nodes = _multi_node()
        world = ranks_per_node * nodes
        what = f"FSDP over {world} gloo ranks" + (f" on {nodes} nodes" if nodes > 1 else "")
        super().__init__(world, controller, authkey, what, "rank")
        self.failure: str | None = None
        run_id = os.environ.get("REMAT_FSDP_RUN_ID") or f"remat-fsdp-{uuid.uuid4().hex[:8]}"
        self.store = None
        if nodes > 1:
            # Port 0 asks for free ports: the rendezvous store is made here first (the
            # agent's c10d backend, in this process, shares it: multi_tenant).
            endpoint, self.store = _rendezvous_store(endpoint)
        address = f"{self.listener.address[0]}:{self.listener.address[1]}"
        self.endpoint = endpoint  # where the nodes meet (the c10d store)
        # The launchers' log directories (and the other nodes' temporary files): removed when
        # the pool stops, or at exit.
        self.scratch = tempfile.mkdtemp(prefix=f"{run_id}-")
        weakref.finalize(self, shutil.rmtree, self.scratch, ignore_errors=True)
        announce(address, endpoint, run_id)
        config = LaunchConfig(
            min_nodes=nodes,
            max_nodes=nodes,
            nproc_per_node=ranks_per_node,
            run_id=run_id,
            rdzv_backend="c10d",
            # One node: as `torchrun --standalone`, a free port here. More: the endpoint the
            # other nodes' `torchrun --rdzv-endpoint` names too (docs/SCALE.md).
            rdzv_endpoint=endpoint,
            # The agent gives up waiting for the other nodes when the controller does (the
            # default, 600 s, would keep its thread in the rendezvous after a RankFailure).
            rdzv_configs={"join_timeout": int(START_SECONDS)},
            max_restarts=0,
            monitor_interval=0.1,
            start_method="spawn",
            # torch's default is a new torchelastic_* in the temporary directory per launch,
            # never removed. (os.devnull would tail /dev/null in threads that keep a process
            # from exiting until its pool is closed.)
            logs_specs=DefaultLogsSpecs(log_dir=self.scratch),
        )
        launch = elastic_launch(config, rank_main)
        self.thread = threading.Thread(
            target=self._launch,
            args=(launch, self.listener.address, authkey, self.owner),
            daemon=True,
        )
        self.thread.start()
        for node in range(1, nodes if starts_nodes else 1):
            command = torchrun_command(nodes, ranks_per_node, endpoint, run_id, address)
            node_env = {AUTHKEY_VARIABLE: authkey.hex(), "TMPDIR": self.scratch}
            self.start_process(f"torchrun {node}", command, node_env)
        self.accept()

    def _launch(self, launch, address, authkey, owner) -> None:
        try:
            launch(address, authkey, owner)
        except ChildFailedError as error:
            ranks = sorted(error.failures)
            self.failure = "; ".join(f"rank {r} {how(error.failures[r].exitcode)}" for r in ranks)
        except BaseException as error:  # the launcher itself failed
            self.failure = f"the launcher failed: {type(error).__name__}: {error}"

    def launch_failure(self) -> str | None:
        if self.failure:
            return f"this node's launcher: {self.failure}"
        if not self.thread.is_alive() and len(self.members) < self.world:
            return "this node's launcher ended"
        return super().launch_failure()

    def death(self, member) -> str:
        if member.owned and member.parent == os.getpid():  # this process's launcher's rank
            # The launcher notices a dead rank at its next look (0.1 s apart), and its thread
            # ends with the failure: waited for up to the rank timeout, since a loaded machine
            # took over 5 s to get there.
            self.thread.join(timeout=self.timeout)
            return self.failure or "its connection closed"
        return super().death(member)

    def stopped(self) -> None:
        # The launcher's thread ends once its ranks have. It is not waited for long: after a
        # node's loss torch's agent waits at its exit barrier for the others (300 s, fixed).
        self.thread.join(timeout=1)
        shutil.rmtree(self.scratch, ignore_errors=True)

    @property
    def alive(self) -> bool:
        return super().alive and self.thread.is_alive() and self.failure is None


def node_count() -> int:
    """The nodes that each start `REMAT_FSDP_RANKS` ranks: `REMAT_FSDP_NNODES` (a cluster's),
    else the scale profile's `REMAT_SCALE_NODES` (nodes on this machine), else 1."""
    setting = os.environ.get(NODES_VARIABLE, "").strip()
    if not setting:
        return scale_nodes()
    if not setting.isdigit() or int(setting) < 1:
        raise ValueError(f"{NODES_VARIABLE} must be a positive integer, got {setting!r}")
    return int(setting)


def torchrun_command(
    nodes: int, ranks_per_node: int, endpoint: str, run_id: str, controller: str
) -> list[str]:
    """The command that starts another node's ranks: docs/SCALE.md's, as this machine's
    `REMAT_SCALE_NODES` runs it (`python -m torch.distributed.run` is `torchrun`). It joins
    the rendezvous as a guest (`is_host=false`: the store is node 0's)."""
    return [
        python(), "-m", "torch.distributed.run", "--nnodes", str(nodes),
        "--nproc-per-node", str(ranks_per_node), "--rdzv-backend", "c10d",
        "--rdzv-endpoint", endpoint, "--rdzv-id", run_id, "--rdzv-conf", "is_host=false",
        "-m", "implementations.stacks.torch.fsdp_rank", "--controller", controller,
    ]  # fmt: skip


def _multi_node() -> tuple[int, tuple[str, int], bytes, str, bool]:
    """(nodes, the controller's address, its key, the rendezvous endpoint, whether this
    process starts the other nodes) from the environment (see the module)."""
    nodes = node_count()
    if nodes == 1:
        return 1, ("127.0.0.1", 0), secrets.token_bytes(32), "127.0.0.1:0", False
    if not os.environ.get(NODES_VARIABLE, "").strip():  # REMAT_SCALE_NODES: this machine
        return nodes, ("127.0.0.1", 0), secrets.token_bytes(32), "127.0.0.1:0", True
    named = {}
    for name in ("REMAT_FSDP_RDZV_ENDPOINT", "REMAT_FSDP_CONTROLLER"):
        named[name] = os.environ.get(name, "").strip()
        if not named[name]:
            raise ValueError(f"{name} must be set when {NODES_VARIABLE} is {nodes}")
    host_port("REMAT_FSDP_RDZV_ENDPOINT", named["REMAT_FSDP_RDZV_ENDPOINT"])
    controller = host_port("REMAT_FSDP_CONTROLLER", named["REMAT_FSDP_CONTROLLER"])
    return nodes, controller, hex_key(AUTHKEY_VARIABLE), named["REMAT_FSDP_RDZV_ENDPOINT"], False


def _rendezvous_store(endpoint: str) -> tuple[str, TCPStore | None]:
    """(endpoint, store): for `host:0`, a c10d store hosted here on a free port (kept alive
    by the pool; the launcher's agent, in this process, shares it), else none made here."""
    host, port = host_port("REMAT_FSDP_RDZV_ENDPOINT", endpoint)
    if port != 0:
        return endpoint, None
    store = TCPStore(
        host, 0, is_master=True, multi_tenant=True, wait_for_workers=False,
        timeout=timedelta(seconds=60),
    )  # fmt: skip
    return f"{host}:{store.port}", store


def announce(controller: str, endpoint: str, run_id: str) -> None:
    """Write where the other nodes must go to the file `REMAT_FSDP_ANNOUNCE` names (if set),
    atomically: `{"controller", "rdzv_endpoint", "run_id", "pid"}`, what a launcher of the
    other nodes waits for when the ports were picked here."""
    path = os.environ.get(ANNOUNCE_VARIABLE, "").strip()
    if not path:
        return
    text = json.dumps(
        {"controller": controller, "rdzv_endpoint": endpoint, "run_id": run_id,
         "pid": os.getpid(), "time": time.time()}
    )  # fmt: skip
    with open(f"{path}.tmp", "w") as file:
        file.write(text)
    os.replace(f"{path}.tmp", path)
