"""The JAX SPMD port: the MLP under `NamedSharding` over N devices, `jax.checkpoint` around it.

N is `REMAT_SPMD_DEVICES` (default 4), read when this module is first
imported: the devices of every JAX process together. On a CPU host the
devices are XLA's forced host devices: the module adds
`--xla_force_host_platform_device_count=N/P` to `XLA_FLAGS` before it
imports jax, so it must be the first to import jax in its process (the
suite's worker for this port is; under pytest, the tests start a process of
their own). Where jax was imported first with fewer devices, importing this
module raises `StackUnavailable`: the port loads in a process of its own.

**Processes** (P, docs/SCALE.md). One by default: this process holds the
mesh. With `REMAT_SCALE_NODES=2` (or a cluster's `REMAT_JAX_PROCESSES`),
this process is a controller: it computes nothing on the mesh, and every
call goes to P JAX processes (`implementations.stacks.jax.processes`, each
running `spmd_process`, which imports this module with `REMAT_JAX_MEMBER`
set: it then calls `jax.distributed.initialize`, and the mesh spans every
process's devices). The argument checks run here first, so that a process
never starts a call the port refuses.

The contract's calls (one x of shape `(D,)`) run in the `"feature"` layout:
x replicated, the hidden layer split over the devices (Dense_0's kernel by
columns, Dense_1's by rows), asked of the compiler with
`with_sharding_constraint` so that any F works (GSPMD pads uneven shards).
`rank_records` measures each device's residuals and backward program in
either layout, on a batch (`implementations.stacks.jax.spmd`), each process
its own devices'.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, ClassVar

from implementations.contract import PARAM_NAMES, StackUnavailable
from implementations.rank_pool import START_SECONDS
from implementations.rank_pool import timeout as rank_timeout
from implementations.sharding import rank_count
from implementations.stacks.jax import processes

DEVICES_VARIABLE = "REMAT_SPMD_DEVICES"
DEVICES = rank_count(DEVICES_VARIABLE, 4)  # every process's together
_FLAG = "--xla_force_host_platform_device_count"
#: In a JAX process a controller started (`spmd_process`): whom to initialize with.
MEMBER = json.loads(os.environ.get(processes.MEMBER_VARIABLE) or "null")
PROCESSES = MEMBER["processes"] if MEMBER else processes.process_count()
#: This process hands every call to the JAX processes (see the module).
CONTROLLER = PROCESSES > 1 and not MEMBER
if DEVICES % PROCESSES:
    raise ValueError(
        f"{DEVICES_VARIABLE}={DEVICES} devices cannot be shared by {PROCESSES} processes"
    )
#: This process's devices: the forced host count is per process; the mesh spans them all.
LOCAL_DEVICES = DEVICES // PROCESSES

if "jax" not in sys.modules and not CONTROLLER:
    # Read by XLA when jax first makes its CPU backend, never after. N is the setting: a
    # device count already in XLA_FLAGS (a parent's) gives way to it.
    _kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(_FLAG)]
    os.environ["XLA_FLAGS"] = " ".join([*_kept, f"{_FLAG}={LOCAL_DEVICES}"])

import functools  # noqa: E402

import jax  # noqa: E402 - after XLA_FLAGS, on purpose
import numpy as np  # noqa: E402

if MEMBER:
    # One of several processes: jax.devices() then lists every process's devices, and the
    # mesh spans them. Process 0's coordination service binds the coordinator's address,
    # not every interface (jax's default). A process that stops heartbeating would make JAX
    # abort the others; the controller's REMAT_RANK_TIMEOUT comes first, and kills them.
    jax.distributed.initialize(
        coordinator_address=MEMBER["coordinator"],
        num_processes=PROCESSES,
        process_id=MEMBER["process_id"],
        coordinator_bind_address=(os.environ.get(processes.BIND_VARIABLE) or MEMBER["coordinator"]),
        heartbeat_timeout_seconds=int(rank_timeout()) + 30,
        initialization_timeout=int(START_SECONDS),
    )

if not CONTROLLER and len(jax.devices()) < DEVICES:
    raise StackUnavailable(
        f"jax_spmd needs {DEVICES} devices ({DEVICES_VARIABLE}) and jax was imported here "
        f"with {len(jax.devices())}: it loads in a process of its own"
    )

from implementations.contract import (  # noqa: E402
    BackwardRecord,
    Grads,
    Params,
    check_features,
    check_seed,
    check_sizes,
)
from implementations.policies import FULL, Policy, as_policy  # noqa: E402
from implementations.sharding import LAYOUTS, RankRecord  # noqa: E402
from implementations.stacks.jax import JaxPort, checked_x, spmd  # noqa: E402
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
    not_composable: ClassVar[dict[str, str]] = {
        case: "not wired: a controller hands its calls and records to the JAX processes by "
        "policy alone, and its region is jax_checkpoint's jax.checkpoint, whose composition "
        "the jax_checkpoint port shows"
        for case in ("twice", "under_trainer")
    }
    ranks = DEVICES
    layouts = LAYOUTS
    #: What the contract's single-example calls use (a batch of one cannot be split by rows).
    layout = "feature"

    @property
    def mesh(self):
        if CONTROLLER:
            raise RuntimeError(
                f"jax_spmd on {PROCESSES} processes: the mesh is the JAX processes', and this "
                "process is their controller"
            )
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

    # -- the contract: here on one process; on several, sent to every process ------------
    # Results on a mesh over several processes are not all addressable in one: gathered
    # (`spmd.host_value`, a collective: every process runs these calls, in the same order).

    def pool(self) -> processes.ProcessPool:
        """The JAX processes (several only), started on first use (and after a failure)."""
        return processes.pool(PROCESSES, DEVICES)

    def everywhere(self, method: str, *args: Any, only: int | None = None, **kwargs) -> list:
        """`method(*args, **kwargs)` of this port's class on every JAX process (or on process
        `only`, for what runs no program on the mesh): their answers, by process."""
        target = f"{type(self).__module__}:{type(self).__qualname__}"
        return self.pool().ask((target, method, args, kwargs), only=only)

    def close(self) -> None:
        """Stop the JAX processes, if any (they stop with this process anyway)."""
        if CONTROLLER:
            processes.close()

    def forward(self, params: Params, x: np.ndarray, *, checkpoint=True) -> np.ndarray:
        policy, x = self.policy(checkpoint), np.asarray(x, np.float32)
        if CONTROLLER:
            return self.everywhere("forward", params, x, checkpoint=policy)[0]
        arrays = tuple(getattr(params, n) for n in PARAM_NAMES)
        return spmd.host_value(self.compiled.forward(arrays, x, checkpoint=policy))

    def vjp(self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint=True):
        policy = self.policy(checkpoint)
        x, cotangent = np.asarray(x, np.float32), np.asarray(cotangent, np.float32)
        if CONTROLLER:
            return self.everywhere("vjp", params, x, cotangent, checkpoint=policy)[0]
        arrays = tuple(getattr(params, n) for n in PARAM_NAMES)
        grads, dx = spmd.host_value(self.compiled.vjp(arrays, x, cotangent, checkpoint=policy))
        return Grads.of(Params(*(np.asarray(g) for g in grads)), dx)

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        """The exercise (see `JaxPort.nn_checkpoint_forward`). On several processes, run by
        every process on a concrete x: a traced x cannot be sent to them (`TypeError`)."""
        if not CONTROLLER:
            return super().nn_checkpoint_forward(seed, x, features)
        seed, features, x = check_seed(seed), check_features(features), checked_x(x)
        if isinstance(x, jax.core.Tracer):
            raise TypeError(
                f"x is traced: jax_spmd on {PROCESSES} processes runs the exercise in them, "
                "on a concrete x only"
            )
        check_sizes(x.shape[0], features)
        x = np.asarray(x, np.float32)
        return jax.numpy.asarray(self.everywhere("nn_checkpoint_forward", seed, x, features)[0])

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True
    ) -> BackwardRecord:
        if not CONTROLLER:
            return super().backward_record(params, x, checkpoint=checkpoint)
        policy, x = self.policy(checkpoint), np.asarray(x, np.float32)
        return self.cached_record(  # a trace, no program on the mesh: process 0 alone
            ("vjp", params.dim, params.features, policy),
            lambda: self.everywhere("backward_record", params, x, checkpoint=policy, only=0)[0],
        )

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        if not CONTROLLER:
            return super().exercise_record(seed, x, features)
        features, x = check_features(features), np.asarray(x, np.float32)
        return self.cached_record(
            ("exercise", x.shape, features),
            lambda: self.everywhere("exercise_record", seed, x, features, only=0)[0],
        )

    def rank_records(
        self, params: Params, x: np.ndarray, layout: str, *, checkpoint: bool = True
    ) -> tuple[RankRecord, ...]:
        """Each device's evidence for the VJP on `x` (`(B, D)` with B a multiple of N in the
        batch layout; F a multiple of N in the feature layout), from separately compiled
        forward and backward programs; on several processes, each measures its own devices."""
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        if CONTROLLER:
            x = np.asarray(x, np.float32)
            return self.cached_record(
                ("ranks", x.shape, params.features, layout, checkpoint),
                lambda: tuple(
                    sorted(
                        (r for mine in self.everywhere(
                            "rank_records", params, x, layout, checkpoint=checkpoint
                        ) for r in mine),
                        key=lambda record: record.rank,
                    )
                ),
            )  # fmt: skip
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
        """Seconds per training step (forward and backward programs) on the batch `x`; on
        several processes, the slowest process's, step by step."""
        if CONTROLLER:
            per_process = self.everywhere(
                "step_times", params, x, layout, checkpoint=checkpoint, repeats=repeats
            )
            return [max(times) for times in zip(*per_process, strict=True)]
        x = np.asarray(x, np.float32)
        cotangent = np.ones((*x.shape[:-1], params.features), np.float32)
        arrays = tuple(getattr(params, n) for n in PARAM_NAMES)
        fn = lambda p, v: self.run(p, v, checkpoint)  # noqa: E731
        return spmd.step_times(fn, self.mesh, layout, arrays, x, cotangent, repeats)


nn_checkpoint_forward = JaxSpmd.exported()
