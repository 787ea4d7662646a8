"""The JAX SPMD port: the MLP under `NamedSharding` over N devices, `jax.checkpoint` around it.

N is `REMAT_SPMD_DEVICES` (default 4), read when this module is first
imported. On a CPU host the devices are XLA's forced host devices: the
module adds `--xla_force_host_platform_device_count=N` to `XLA_FLAGS`
before it imports jax, so it must be the first to import jax in its process
(the suite's worker for this port is; under pytest, the tests start a process
of their own). Where jax was imported first with fewer devices, importing
this module raises `StackUnavailable`: the port loads in a process of its own.

The contract's calls (one x of shape `(D,)`) run in the `"feature"` layout:
x replicated, the hidden layer split over the devices (Dense_0's kernel by
columns, Dense_1's by rows), asked of the compiler with
`with_sharding_constraint` so that any F works (GSPMD pads uneven shards).
`rank_records` measures each device's residuals and backward program in
either layout, on a batch (`implementations.stacks.jax.spmd`).
"""

from __future__ import annotations

import os
import sys

from implementations.contract import PARAM_NAMES, StackUnavailable
from implementations.sharding import rank_count

DEVICES_VARIABLE = "REMAT_SPMD_DEVICES"
DEVICES = rank_count(DEVICES_VARIABLE, 4)
_FLAG = "--xla_force_host_platform_device_count"

if "jax" not in sys.modules:
    # Read by XLA when jax first makes its CPU backend, never after. N is the setting: a
    # device count already in XLA_FLAGS (a parent's) gives way to it.
    _kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(_FLAG)]
    os.environ["XLA_FLAGS"] = " ".join([*_kept, f"{_FLAG}={DEVICES}"])

import functools  # noqa: E402

import jax  # noqa: E402 - after XLA_FLAGS, on purpose
import numpy as np  # noqa: E402

if os.environ.get("REMAT_JAX_COORDINATOR"):
    # Several hosts (docs/SCALE.md): every host runs this same suite, one process each;
    # jax.devices() then lists every host's devices, and the mesh spans them.
    jax.distributed.initialize(
        coordinator_address=os.environ["REMAT_JAX_COORDINATOR"],
        num_processes=rank_count("REMAT_JAX_PROCESSES", 1),
        process_id=int(os.environ.get("REMAT_JAX_PROCESS_ID", "0")),
    )

if len(jax.devices()) < DEVICES:
    raise StackUnavailable(
        f"jax_spmd needs {DEVICES} devices ({DEVICES_VARIABLE}) and jax was imported here "
        f"with {len(jax.devices())}: it loads in a process of its own"
    )

from implementations.contract import Params  # noqa: E402
from implementations.policies import FULL, Policy, as_policy  # noqa: E402
from implementations.sharding import LAYOUTS, RankRecord  # noqa: E402
from implementations.stacks.jax import JaxPort, spmd  # noqa: E402
from implementations.stacks.jax.policies import declaration, policy_function, tag  # noqa: E402


def block(arrays: tuple, x: jax.Array) -> jax.Array:
    """`Dense(F)` -> relu -> `Dense(F)` on `(D,)` or `(B, D)` x, as Flax's Dense computes it."""
    w1, b1, w2, b2 = arrays
    return jax.nn.relu(tag(x @ w1 + b1)) @ w2 + b2  # h tagged for save_named


checkpointed_block = jax.checkpoint(block)


@functools.lru_cache(maxsize=32)
def policy_block(policy: Policy):
    """`jax.checkpoint(block, policy=...)` for a remat policy other than none and full."""
    return jax.checkpoint(block, policy=policy_function(policy))


class JaxSpmd(JaxPort):
    """JAX under `NamedSharding` over `DEVICES` devices, `jax.checkpoint` around the MLP."""

    name = "jax_spmd"
    framework = "jax"
    checkpoint_api = "jax.checkpoint under NamedSharding"
    # The JAX fronts' policies: `jax.checkpoint`'s `policy=` is the same under sharding.
    policies, inexpressible = declaration(
        "block (no jax.checkpoint)", "jax.checkpoint(block)", "jax.checkpoint(block, policy=...)"
    )
    ranks = DEVICES
    layouts = LAYOUTS
    #: What the contract's single-example calls use (a batch of one cannot be split by rows).
    layout = "feature"

    @property
    def mesh(self):
        mesh = self.__dict__.get("_mesh")
        if mesh is None:
            mesh = self.__dict__["_mesh"] = spmd.make_mesh(self.ranks)
        return mesh

    def to_native(self, w1, b1, w2, b2) -> tuple:
        return (w1, b1, w2, b2)

    def to_canonical(self, arrays: tuple) -> tuple:
        return tuple(arrays)

    def run(self, arrays: tuple, x: jax.Array, checkpoint: bool | Policy) -> jax.Array:
        """The MLP under a remat policy (`True`: full, `False`: none), sharding asked for by
        `apply` and `rank_records`."""
        policy = as_policy(checkpoint)
        if policy == FULL or not policy:
            return (checkpointed_block if policy else block)(arrays, x)
        return policy_block(policy)(arrays, x)

    def apply(self, arrays: tuple, x: jax.Array, checkpoint: bool) -> jax.Array:
        return self.run(spmd.constrain(self.mesh, self.layout, arrays), x, checkpoint)

    def rank_records(
        self, params: Params, x: np.ndarray, layout: str, *, checkpoint: bool = True
    ) -> tuple[RankRecord, ...]:
        """Each device's evidence for the VJP on `x` (`(B, D)` with B a multiple of N in the
        batch layout; F a multiple of N in the feature layout), from separately compiled
        forward and backward programs."""
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        x = np.asarray(x, np.float32)
        cotangent = np.ones((*x.shape[:-1], params.features), np.float32)
        arrays = tuple(getattr(params, n) for n in PARAM_NAMES)
        fn = lambda p, v: self.run(p, v, checkpoint)  # noqa: E731
        # Compiled programs and their shards depend on the shapes only: kept per shape.
        return self.cached_record(
            ("ranks", x.shape, params.features, layout, checkpoint),
            lambda: spmd.rank_records(fn, self.mesh, layout, arrays, x, cotangent),
        )

    def step_times(
        self, params: Params, x: np.ndarray, layout: str, *, checkpoint: bool, repeats: int
    ) -> list[float]:
        """Seconds per training step (forward and backward programs) on the batch `x`."""
        x = np.asarray(x, np.float32)
        cotangent = np.ones((*x.shape[:-1], params.features), np.float32)
        arrays = tuple(getattr(params, n) for n in PARAM_NAMES)
        fn = lambda p, v: self.run(p, v, checkpoint)  # noqa: E731
        return spmd.step_times(fn, self.mesh, layout, arrays, x, cotangent, repeats)


nn_checkpoint_forward = JaxSpmd.exported()
