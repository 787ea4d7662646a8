"""A port's first call, timed in a fresh Python process with no compilation cache.

In-process or on-disk caches would hide what a first use costs (importing
the framework, tracing and compiling), so the parent starts
`python -m conformance.compare.first_call NAME INPUTS SEED` per port. The
child loads the port, runs its first `nn_checkpoint_forward` and its first
`vjp`, and prints one JSON line: the seconds of each, or what went wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..running import environment

TIMEOUT_SECONDS = 600.0


def first_call(name: str, inputs: Path, seed: int) -> dict[str, Any]:
    """Time a port's first use in a new process; **returns** `{"import", "forward", "vjp"}`
    seconds, or `{"error": ...}`."""
    env = dict(os.environ)
    # The parent's environment.prepare() pointed JAX at the on-disk cache; a
    # warm cache would make a compile look free. Turn it off for the child.
    env[environment.CACHE_ENV] = "off"
    for key in list(env):
        if key.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE")):
            del env[key]
    command = [sys.executable, "-m", __name__, name, str(inputs), str(seed)]
    # A session of its own: what it starts (inductor's compile workers) is in its group,
    # and ends with it; a terminal's Ctrl-C reaches the parent, which ends the group.
    child = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = child.communicate(timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        return {"error": f"no answer within {TIMEOUT_SECONDS:.0f} s"}
    except BaseException:  # interrupted: leave nothing running
        _kill_group(child)
        raise
    lines = stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {child.returncode}: {last}"}


def _kill_group(child: subprocess.Popen) -> None:
    """SIGKILL the child's process group (it leads it, unreaped), then reap the child."""
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)
    child.kill()
    child.wait()


def measure(name: str, inputs: Path, seed: int) -> dict[str, Any]:
    """In this (fresh) process: load the port, then time its first forward and VJP."""
    import implementations
    from implementations.contract import PARAM_NAMES, Params

    environment.prepare()
    data = np.load(inputs)
    params = Params(*(data[k] for k in PARAM_NAMES))
    x, cotangent = data["x"], data["cotangent"]
    try:
        started = time.perf_counter()
        port = implementations.load(name)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}", description=__doc__)
    parser.add_argument("name", help="the registered port")
    parser.add_argument("inputs", type=Path, help="an .npz with w1, b1, w2, b2, x, cotangent")
    parser.add_argument("seed", type=int)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.name, args.inputs, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
