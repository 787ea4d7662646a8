"""Speed of the numpy canonical init and of the PyTorch port, beside JAX and the Flax port.

Run: `python benchmarks/numpy_init_vs_jax.py [--calls 200]` (needs jax, flax and torch).

In one process, taking turns in blocks of calls so that both sides see the
same machine load, with a new seed on every call, the median over many calls:

- **init**: `implementations.stacks.numpy.canonical_params` (numpy) against JAX's jitted
  Flax init, both raw (`jax.jit(CheckpointMLP(F).init)`, block until ready)
  and as the contract's `FlaxLinen().init_params` (which also copies to numpy);
- **exercise**: `pytorch.nn_checkpoint_forward` against
  `flax_linen.nn_checkpoint_forward`, each on its own array type.

Warm means after one call with the same shapes (JAX compiled, numpy's table
built). First calls are timed in fresh subprocesses, imports excluded: they
include JAX's compilation, numpy's one-off table (16 MiB) and torch's lazy
imports behind `torch.utils.checkpoint`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch

from implementations.stacks.jax import flax_linen, pytorch
from implementations.stacks.numpy import canonical_params

SHAPES = [(16, 16), (256, 256)]


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def interleaved(functions: dict, calls: int, seed0: int, block: int = 10) -> dict[str, float]:
    """Median seconds per call of each `fn(seed)`, seeds seed0, seed0 + 1, ..., in turns.

    The functions take turns in blocks of `block` calls, so that all see the
    same machine load, while no call runs right after another framework's.
    """
    for fn in functions.values():
        fn(seed0 - 1)  # warm: same shapes, compiled, table built
    times: dict[str, list[float]] = {name: [] for name in functions}
    for start in range(0, calls, block):
        for name, fn in functions.items():
            fn(seed0 - 2)  # one untimed call after the switch
            for i in range(start, min(calls, start + block)):
                times[name].append(_timed(fn, seed0 + i))
    return {name: statistics.median(values) for name, values in times.items()}


def init_functions(dim: int, features: int) -> dict:
    raw = jax.jit(flax_linen.CheckpointMLP(features=features).init)
    zeros = jnp.zeros((dim,), jnp.float32)
    port = flax_linen.FlaxLinen()
    return {
        "numpy canonical_params": lambda seed: canonical_params(seed, dim, features),
        "jax jitted init (raw)": lambda seed: jax.block_until_ready(
            raw(jax.random.PRNGKey(seed), zeros)
        ),
        "FlaxLinen().init_params": lambda seed: port.init_params(seed, dim, features),
    }


def exercise_functions(dim: int, features: int) -> dict:
    x = np.random.default_rng(0).normal(size=dim).astype(np.float32)
    x_torch, x_jax = torch.from_numpy(x.copy()), jnp.asarray(x)
    return {
        "torch nn_checkpoint_forward": lambda seed: pytorch.nn_checkpoint_forward(
            seed, x_torch, features
        ),
        "flax nn_checkpoint_forward": lambda seed: jax.block_until_ready(
            flax_linen.nn_checkpoint_forward(seed, x_jax, features)
        ),
    }


FIRST_CALL = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    kind, dim, features = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    x = np.random.default_rng(0).normal(size=dim).astype(np.float32)
    if kind == "numpy":
        from implementations.stacks.numpy import canonical_params
        call = lambda: canonical_params(1, dim, features)
    elif kind == "torch":
        import torch
        from implementations.stacks.torch.pytorch import nn_checkpoint_forward
        xt = torch.from_numpy(x)
        call = lambda: nn_checkpoint_forward(1, xt, features)
    else:
        import jax, jax.numpy as jnp
        from implementations.stacks.jax.flax_linen import nn_checkpoint_forward
        xj = jnp.asarray(x)
        call = lambda: jax.block_until_ready(nn_checkpoint_forward(1, xj, features))
    start = time.perf_counter()
    call()
    print(time.perf_counter() - start)
    """
)


def first_call(kind: str, dim: int, features: int) -> float:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        [sys.executable, "-c", FIRST_CALL, kind, str(dim), str(features)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout.split()[-1])


def _row(name: str, seconds: float, baseline: float | None = None) -> str:
    ratio = f"  ({seconds / baseline:4.2f}x)" if baseline else ""
    return f"    {name:28s} {seconds * 1e3:8.3f} ms{ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="timed calls per function")
    args = parser.parse_args()
    print(
        f"numpy {np.__version__}, jax {jax.__version__}, torch {torch.__version__}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    print(f"warm calls: median of {args.calls}, a new seed on every call, taking turns")
    for dim, features in SHAPES:
        print(f"  D={dim}, F={features}")
        init = interleaved(init_functions(dim, features), args.calls, seed0=1000)
        raw = init["jax jitted init (raw)"]
        for name, seconds in init.items():
            print(_row(name, seconds, raw if name != "jax jitted init (raw)" else None))
        exercise = interleaved(exercise_functions(dim, features), args.calls, seed0=5000)
        flax_time = exercise["flax nn_checkpoint_forward"]
        for name, seconds in exercise.items():
            print(_row(name, seconds, flax_time if name.startswith("torch") else None))
    print("first calls, each in a fresh process (imports not timed)")
    for dim, features in SHAPES:
        cells = [
            f"{kind} {first_call(kind, dim, features) * 1e3:8.1f} ms"
            for kind in ("numpy", "torch", "flax")
        ]
        print(f"  D={dim}, F={features}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
