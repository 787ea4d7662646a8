"""JAX SPMD: the MLP under `NamedSharding` over N devices, and its per-device evidence.

Imports jax only. The devices are XLA:CPU host devices, made by
`XLA_FLAGS=--xla_force_host_platform_device_count=N` before jax is first
imported (`implementations.stacks.jax.jax_spmd` does that); on a GPU or TPU host they are
the accelerators.

**Layouts** (`implementations.sharding.LAYOUTS`), over a 1-D mesh with axis `"ranks"`:

- `"batch"`: x `(B, D)` split by rows `P("ranks", None)`, parameters replicated;
- `"feature"`: x replicated, Dense_0's kernel `P(None, "ranks")` and bias
  `P("ranks")`, Dense_1's kernel `P("ranks", None)`: each device holds 1/N of
  the hidden layer.

**Per-device evidence** (`rank_records`) comes from two programs compiled
separately, as a training step with a checkpoint runs them when forward and
backward are apart: `jit(lambda p, x: jax.vjp(f, p, x))` (its outputs after
the primal output are the residuals, each a sharded array whose shard on
each device is measured) and `jit(lambda pullback, ct: pullback(ct))` (its
partitioned HLO, the program every device runs, counted for `dot`s). Compiled
as one `jit`, XLA:CPU drops the checkpoint's optimization barrier and merges
the recomputation away (pinned in the tests: `merged_vjp_matmuls` in
tests/support/spmd_probe.py).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.extend import core
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ...sharding import RankRecord
from . import instrument

AXIS = "ranks"
INSTRUMENT = (
    "shards of jit(jax.vjp)'s residuals on each device; dots of the separately "
    "compiled backward's partitioned HLO"
)

#: Each layout's partition specs: (w1, b1, w2, b2) and x (batched `(B, D)` or a vector).
PARAM_SPECS = {
    "batch": (P(), P(), P(), P()),
    "feature": (P(None, AXIS), P(AXIS), P(AXIS, None), P()),
}


def make_mesh(devices: int) -> Mesh:
    """A 1-D mesh over the first `devices` devices, with axes sharded automatically (GSPMD)."""
    found = jax.devices()
    if len(found) < devices:
        raise ValueError(
            f"devices={devices}: jax sees {len(found)} device(s); set XLA_FLAGS="
            f"--xla_force_host_platform_device_count={devices} before jax is imported"
        )
    return Mesh(np.array(found[:devices]), (AXIS,), axis_types=(jax.sharding.AxisType.Auto,))


def x_spec(layout: str, ndim: int) -> P:
    """x's partition spec: rows split in the batch layout (a vector cannot be), else none."""
    return P(AXIS, None) if layout == "batch" and ndim == 2 else P()


def constrain(mesh: Mesh, layout: str, arrays: Sequence[Any]) -> tuple:
    """The parameters inside a trace, with the layout's sharding asked of the compiler. Uneven
    shapes are fine here (GSPMD pads), unlike `device_put`."""
    return tuple(
        jax.lax.with_sharding_constraint(a, NamedSharding(mesh, spec))
        for a, spec in zip(arrays, PARAM_SPECS[layout], strict=True)
    )


def placed(mesh: Mesh, layout: str, arrays: Sequence[Any], x: Any) -> tuple[tuple, jax.Array]:
    """Parameters and x on the mesh in the layout (the sharded dimensions must divide by N)."""
    params = tuple(
        jax.device_put(np.asarray(a, np.float32), NamedSharding(mesh, spec))
        for a, spec in zip(arrays, PARAM_SPECS[layout], strict=True)
    )
    x = np.asarray(x, np.float32)
    return params, jax.device_put(x, NamedSharding(mesh, x_spec(layout, x.ndim)))


def residual_origins(fn: Callable, params: tuple, x: Any) -> list[str]:
    """For each residual leaf of `jax.vjp(fn, params, x)`: "input", "activation",
    "parameter" or "constant" (traced through the forward jaxpr, as `instrument` does);
    a leaf repeated later is "duplicate"."""
    flat, tree = jax.tree_util.tree_flatten((params, x))
    flags = [False] * (len(flat) - 1) + [True]  # x is the last leaf

    def forward_and_residuals(*leaves):
        _, pullback = jax.vjp(fn, *jax.tree_util.tree_unflatten(tree, leaves))
        return jax.tree_util.tree_leaves(pullback)

    jaxpr = jax.make_jaxpr(forward_and_residuals)(*flat).jaxpr
    from_input = instrument.depends_on(jaxpr, flags)
    from_any = instrument.depends_on(jaxpr, [True] * len(flat))
    origins, seen = [], set()
    for var in jaxpr.outvars:
        if isinstance(var, core.Literal):
            origins.append("constant")
            continue
        if var in seen:
            origins.append("duplicate")
            continue
        seen.add(var)
        if var in jaxpr.invars:
            origins.append("input" if jaxpr.invars.index(var) == len(flat) - 1 else "parameter")
        elif from_input.get(var, False):
            origins.append("activation")
        else:
            origins.append("parameter" if from_any.get(var, False) else "constant")
    return origins


def host_value(tree: Any) -> Any:
    """Results as numpy: `np.asarray` where this process holds all of an array, else
    gathered from every process (`multihost_utils.process_allgather`, a collective: every
    process must call it, in the same order)."""
    from jax.experimental import multihost_utils

    def one(array):
        if isinstance(array, jax.Array) and not array.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(array, tiled=True))
        return np.asarray(array)

    return jax.tree_util.tree_map(one, tree)


def _dots(hlo: str) -> int:
    return len(re.findall(r"\bdot\(", hlo))


def rank_records(
    fn: Callable, mesh: Mesh, layout: str, arrays: Sequence[Any], x: Any, cotangent: Any
) -> tuple[RankRecord, ...]:
    """Each of this process's devices' evidence for `jax.vjp(fn, params, x)` in `layout` (see
    the module): the shards it holds, the backward program it compiled itself."""
    params, x = placed(mesh, layout, arrays, x)
    origins = residual_origins(fn, params, x)
    _, pullback = jax.jit(lambda p, v: jax.vjp(fn, p, v))(params, x)
    leaves = jax.tree_util.tree_leaves(pullback)
    if len(leaves) != len(origins):
        raise RuntimeError(f"{len(leaves)} residual arrays, {len(origins)} traced residuals")
    ct_spec = x_spec(layout, np.ndim(cotangent))
    ct = jax.device_put(np.asarray(cotangent, np.float32), NamedSharding(mesh, ct_spec))
    backward = jax.jit(lambda pb, c: pb(c)).lower(pullback, ct)
    matmuls = _dots(backward.compile().as_text())
    recomputed = dict(instrument.recomputed_ops(jax.make_jaxpr(lambda c: pullback(c))(ct)))
    records, here = [], jax.process_index()
    where = (f"process {here}", socket.gethostname(), os.getpid())
    for rank, device in enumerate(mesh.devices.flat):
        if device.process_index != here:
            continue  # another process's: its shards are not addressable here; it measures them
        kept = inputs = 0
        for leaf, origin in zip(leaves, origins, strict=True):
            if origin not in ("input", "activation"):
                continue
            size = sum(s.data.nbytes for s in leaf.addressable_shards if s.device == device)
            kept += size
            inputs += size if origin == "input" else 0
        x_shard = sum(s.data.nbytes for s in x.addressable_shards if s.device == device)
        records.append(
            RankRecord(rank, layout, kept, inputs, x_shard, recomputed, matmuls, INSTRUMENT, *where)
        )
    return tuple(records)


def step_times(
    fn: Callable,
    mesh: Mesh,
    layout: str,
    arrays: Sequence[Any],
    x: Any,
    cotangent: Any,
    repeats: int,
) -> list[float]:
    """Seconds of each of `repeats` steps (the forward program, then the backward one,
    compiled apart as `rank_records` measures them), after one that compiles and warms."""
    import time

    params, x = placed(mesh, layout, arrays, x)
    ct = jax.device_put(
        np.asarray(cotangent, np.float32), NamedSharding(mesh, x_spec(layout, np.ndim(cotangent)))
    )
    forward = jax.jit(lambda p, v: jax.vjp(fn, p, v))
    backward = jax.jit(lambda pb, c: pb(c))
    times = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        _, pullback = forward(params, x)
        jax.block_until_ready(backward(pullback, ct))
        times.append(time.perf_counter() - started)
    return times[1:]
