"""One JAX process of `jax_spmd` on several: `python -m implementations.stacks.jax.spmd_process`.

```sh
REMAT_JAX_AUTHKEY=<the controller's key, hex> python -m implementations.stacks.jax.spmd_process \\
    --processes 2 --process-id 1 --devices 4 --coordinator HOST0:PORT --controller HOST0:PORT
```

The controller (`implementations.stacks.jax.processes`, in the port's
process) starts this for every process on its machine; on a cluster a user
starts it on the other hosts (docs/SCALE.md). It forces `devices /
processes` host devices and calls `jax.distributed.initialize` (the port's
import does both: `jax_spmd` is the first to import jax here), connects to
the controller **after** `initialize` returns (process 0's controller
accepts only once every process has registered), says who and where it is,
and runs each request `(target, method, args, kwargs)` on an instance of
the port class `target` (`"module:Class"`: the port or a mutant): the same
calls in the same order on every process. Results that are arrays on the
global mesh are gathered (`spmd.host_value`, a collective). On "stop" every
process meets at `jax.distributed.shutdown()` (without it, exit waits at
JAX's shutdown barrier and is then aborted); if the controller is gone, it
exits at once. It also exits when its parent goes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import socket
import sys
import time
from multiprocessing.connection import Client

from ...rank_pool import OWNER_VARIABLE, hex_key, host_port, watch_parent
from .processes import AUTHKEY_VARIABLE, MEMBER_VARIABLE


def serve(connection) -> None:
    """Answer the controller's requests until "stop" (then shut down with the others)."""
    import jax

    from . import spmd  # imports jax: only once main has set the host devices (docstring)

    ports: dict[str, object] = {}
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):  # the controller is gone: so may be the others
            return
        if request[0] == "stop":
            jax.distributed.shutdown()
            return
        if request[0] == "sleep":  # a hung process, for the tests
            time.sleep(request[1])
            connection.send(("returned", None))
            continue
        target, method, args, kwargs = request
        try:
            port = ports.get(target)
            if port is None:
                module, _, name = target.partition(":")
                port = ports[target] = getattr(importlib.import_module(module), name)()
            value = getattr(port, method)(*args, **kwargs)
            if isinstance(value, jax.Array):  # the exercise's output, on the global mesh
                value = spmd.host_value(value)
            answer = ("returned", value)
        except Exception as error:
            answer = ("raised", f"{type(error).__name__}: {error}")
        connection.send(answer)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m implementations.stacks.jax.spmd_process")
    parser.add_argument("--processes", type=int, required=True, metavar="N")
    parser.add_argument("--process-id", type=int, required=True, metavar="I")
    parser.add_argument("--devices", type=int, required=True, metavar="D", help="all processes'")
    parser.add_argument("--coordinator", required=True, metavar="HOST:PORT")
    parser.add_argument("--controller", required=True, metavar="HOST:PORT")
    args = parser.parse_args(argv)
    try:
        controller = host_port("--controller", args.controller)
        host_port("--coordinator", args.coordinator)
        authkey = hex_key(AUTHKEY_VARIABLE)
    except ValueError as error:
        parser.error(str(error))
    if not 0 <= args.process_id < args.processes:
        parser.error(f"--process-id must be from 0 to {args.processes - 1}")
    watch_parent()
    # What the port's import reads: the devices of all processes, and whom to initialize with.
    os.environ["REMAT_SPMD_DEVICES"] = str(args.devices)
    os.environ[MEMBER_VARIABLE] = json.dumps(
        {"processes": args.processes, "process_id": args.process_id,
         "coordinator": args.coordinator}
    )  # fmt: skip
    # The port's module first: it forces the host devices, then jax.distributed.initialize.
    jax_spmd = importlib.import_module("implementations.stacks.jax.jax_spmd")
    jax = sys.modules["jax"]
    jax_spmd.JaxSpmd.stack.pin_matmul_precision()
    connection = Client(controller, authkey=authkey)
    info = {
        "pid": os.getpid(), "parent": os.getppid(), "host": socket.gethostname(),
        "node": f"process {jax.process_index()}", "owner": os.environ.get(OWNER_VARIABLE, ""),
        "devices": [d.id for d in jax.local_devices()],
    }  # fmt: skip
    connection.send(("ready", jax.process_index(), info))
    serve(connection)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # the distributed client is shut down, or its peers are gone


if __name__ == "__main__":
    main()
