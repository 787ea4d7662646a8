"""A port's first call, timed in a fresh Python process with no compilation cache.

In-process or on-disk caches would hide what a first use costs (importing
the framework, tracing and compiling), so the parent runs `measure` per
port in a fresh process (`running.isolation`), every compilation cache off. The
child loads the port, runs its first `nn_checkpoint_forward` and its first
`vjp`, and returns the seconds of each, or what went wrong.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import implementations
from implementations.contract import PARAM_NAMES, Params

from ..running import environment, framework_caches, isolation
from . import rows

TIMEOUT_SECONDS = 600.0


def first_call(name: str, inputs: Path, seed: int) -> dict[str, Any]:
    """Time a port's first use in a new process; **returns** `{"import", "forward", "vjp"}`
    seconds, or `{"error": ...}`."""
    env = dict(os.environ)
    # The parent's environment.prepare() pointed every framework at its on-disk cache; a
    # warm cache would make a compile look free. Turn them all off for the child.
    for cache in framework_caches.declared().values():
        env[cache.setting] = "off"
        for variable in (cache.directory_variable, *cache.when_on):
            env.pop(variable, None)
    # A cache that writes even when off (inductor's generated code) writes to the child's
    # scratch directory. Made here, it is removed here, when the child is killed too (a
    # SIGTERM to the comparison kills it, and its own exit handler never runs); and it is
    # the child's alone: nothing one port's first call wrote is there for the next.
    with tempfile.TemporaryDirectory(prefix="remat-conformance-first-call-") as scratch:
        env[environment.SCRATCH_ENV] = scratch
        done = isolation.run(
            f"{__name__}:measure", (name, str(inputs), seed), env=env, timeout=TIMEOUT_SECONDS
        )
    if done.status == "returned":
        return done.value
    if done.status in ("timeout", "raised"):
        return {"error": done.error}
    last = (done.output.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {done.exit_code}: {last}"}


def measure(name: str, inputs: str, seed: int) -> dict[str, Any]:
    """In this (fresh) process: load the port, then time its first forward and VJP."""
    environment.prepare()
    data = np.load(inputs)
    params = Params(*(data[k] for k in PARAM_NAMES))
    x, cotangent = data["x"], data["cotangent"]
    try:
        started = time.perf_counter()
        port = rows.load(name) if name in rows.declared() else implementations.load(name)
        port.pin_matmul_precision()
        loaded = time.perf_counter()
        port.to_numpy(port.nn_checkpoint_forward(seed, port.from_numpy(x), params.features))
        forward = time.perf_counter()
        port.vjp(params, x, cotangent, checkpoint=True)
        vjp = time.perf_counter()
    except implementations.PortUnavailable as error:
        return {"error": error.reason}
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"}
    return {"import": loaded - started, "forward": forward - loaded, "vjp": vjp - forward}
