"""`bench --schedules` on JAX: the depth-L stack with its regions where a schedule places them.
Imports jax, flax and numpy.

- `nested(l1,...,ld)`: Flax linen `nn.remat_scan(Block, lengths=(l1,...,ld))`, the canonical;
- `none`, `every`, `segments(s)`: `lax.scan` over the blocks, each region a `jax.checkpoint`
  (over a block, or over a `lax.scan` of a segment's blocks), the plain tail scanned bare;
- `binomial(c)`: the placement tree unrolled, each region a nested `jax.checkpoint`. Revolve's
  regions differ in size, so no scan carries them, and XLA:CPU's CSE merges an unrolled
  stack's reruns back into the forward pass (docs/BENCHMARKS.md, finding 2): measured, its
  forward matmuls and memory show it.

**Instruments.** Forward matmuls are the optimized HLO's `dot`s of forward direction
(contracting x's features with the kernel's rows: x @ W1 and a @ W2), executed as many times as
their loops run (`hlo_dot_count`), the backward pass's told by JAX's op names
(`transpose(jvp())`: the reruns). Peak bytes are XLA's `memory_analysis()` of the
compiled step: the part of its temporary buffers that grows with the batch, `temp(2B) -
temp(B)` (the program at 2B compiled, never run). Activations are linear in B; the parameters'
gradients are not, and XLA keeps them in temporaries or writes them straight to the outputs as
it sees fit, so subtracting them would be a guess (at B = F it read 0).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.schedules import Departure, Region, Schedule
from implementations.stacks.hlo import hlo_dot_count

FRAMEWORK = "jax"
SCHEDULES = {
    "none": "lax.scan over the plain blocks",
    "every": "lax.scan over jax.checkpoint(block)",
    "segments": "lax.scan over s-1 jax.checkpoint(lax.scan over a segment), the tail plain",
    "nested": "flax.linen.remat_scan(Block, lengths=(l1,...,ld)) (the canonical)",
    "binomial": "the placement tree unrolled, each region a nested jax.checkpoint",
}
SCHEDULES_NOT_EXPRESSIBLE = {
    "budget": "JAX has no memory-budget solver: jax.checkpoint's policies name what to save "
    "per op, not how much",
}
SCHEDULE_DEPARTURES = {
    "segments": "XLA's scheduler places a rerun where it likes: with one region (s = 2) the "
    "rerun needs no cotangent, and it runs while the plain tail's activations are alive, so "
    "segments(2) peaks as none does; beside the tail's blocks JAX keeps relu's mask, a "
    "quarter unit each",
    "nested": Departure(
        "remat_scan's backward is a scan per level: each open level's loop holds its carry, "
        "the cotangent, while the level inside it runs",
        held_per_level=1,
    ),
    "binomial": "XLA:CPU's CSE merges an unrolled stack's reruns into the forward pass "
    "(docs/BENCHMARKS.md, finding 2): Revolve's uneven regions have no scan to keep them",
}
PEAK_METHOD = "XLA memory_analysis(): temp bytes that grow with B, temp(2B) - temp(B)"
_FORWARD_DOT = re.compile(r"lhs_contracting_dims=\{1\}, rhs_contracting_dims=\{0\}")


def block(params, x: jax.Array) -> jax.Array:  # (B, F) -> (B, F), as the depth bench's
    # Written here, not imported from bench.py, which looks these names up in this module.
    w1, b1, w2, b2 = params  # kernels (F, F) as (in, out), biases (F,)
    return jax.nn.relu(x @ w1 + b1[None, :]) @ w2 + b2[None, :]


def step_fn(stack: Callable) -> Callable:
    """`step(params, x, c)`: the loss `sum(stack(params, x) * c)` and the parameters' gradient
    (the loss returned, so that XLA keeps the last block's second matmul)."""

    def step(params, x, cotangent):
        y, pull_back = jax.vjp(lambda p: stack(p, x), params)
        return jnp.sum(y * cotangent), pull_back(cotangent)[0]

    return step


class FlaxBlock(nn.Module):
    """The exercise's block, `Dense(F) -> relu -> Dense(F)`, as Flax linen writes it."""

    features: int

    @nn.compact
    def __call__(self, x):  # (B, F) -> (B, F)
        h = nn.Dense(self.features)(x)  # Dense_0: named first, so made first
        return nn.Dense(self.features)(nn.relu(h))


def flax_stack(lengths: tuple[int, ...], features: int) -> nn.Module:
    """`nn.remat_scan(FlaxBlock, lengths=lengths)`: one level is Flax's plain scanned stack."""
    return nn.remat_scan(FlaxBlock, lengths=lengths)(features)


def _stacked(data: Data) -> tuple[jax.Array, ...]:
    return tuple(jnp.stack([b[i] for b in data.blocks]) for i in range(4))  # (L, ...)


def _flax_params(stacked: tuple[jax.Array, ...], lengths: tuple[int, ...]) -> dict:
    # remat_scan's variables carry one leading axis per level, outermost first: block
    # index i1*l2*...*ld + ... + id, the nested placement's order.
    w1, b1, w2, b2 = (a.reshape(lengths + a.shape[1:]) for a in stacked)
    return {"Dense_0": {"kernel": w1, "bias": b1}, "Dense_1": {"kernel": w2, "bias": b2}}


def _scan(run: Callable) -> Callable:
    def stack(params, x):  # stacked (n, ...), (B, F) -> (B, F)
        return jax.lax.scan(lambda h, p: (run(p, h), None), x, params)[0]

    return stack


def _tree(items: tuple) -> Callable:
    """The placement's items unrolled over stacked params, each region a jax.checkpoint."""
    runs = [
        (item.blocks.start, jax.checkpoint(_tree(item.items)))
        if isinstance(item, Region)
        else (item, None)
        for item in items
    ]

    def run(params, x):
        for index, region in runs:
            x = region(params, x) if region else block(tuple(p[index] for p in params), x)
        return x

    return run


def stack_fn(schedule: Schedule, L: int) -> Callable:
    """`stack(stacked_params, x)` for the schedule at depth L (params `(L, ...)` stacked)."""
    if schedule.name == "nested":
        lengths = schedule.args

        def stack(params, x):
            module = flax_stack(lengths, x.shape[-1])
            return module.apply({"params": _flax_params(params, lengths)}, x)

        return stack
    if schedule.name == "none":
        return _scan(block)
    if schedule.name == "every":
        return _scan(jax.checkpoint(block))
    if schedule.name == "segments":
        s = schedule.args[0]
        size = L // s
        head = size * (s - 1)
        segment = jax.checkpoint(_scan(block))

        def stack(params, x):
            if head:
                grouped = tuple(p[:head].reshape((s - 1, size, *p.shape[1:])) for p in params)
                x = _scan(segment)(grouped, x)
            return _scan(block)(tuple(p[head:] for p in params), x)

        return stack
    if schedule.name == "binomial":
        return _tree(schedule.placement(L))
    raise ValueError(f"schedule {schedule.label!r}: {SCHEDULES_NOT_EXPRESSIBLE['budget']}")


def forward_dots(text: str, backward: bool) -> int | None:
    """Forward-direction `dot`s (x @ W1, a @ W2) one run of the HLO module executes, in the
    backward pass (JAX names its ops `transpose(jvp())` there: the reruns) or in the forward."""

    def kept(line: str) -> bool:
        return bool(_FORWARD_DOT.search(line)) and ("transpose(jvp" in line) == backward

    lines = text.splitlines()
    return hlo_dot_count(
        "\n".join(line if kept(line) else line.replace(" dot(", " other_dot(") for line in lines)
    )


class JaxScheduleCase:
    """One schedule at one depth on JAX (`schedule_case`)."""

    framework = FRAMEWORK

    def __init__(self, schedule: Schedule, data: Data, stack: Callable | None = None):
        self.schedule = schedule.label
        L = len(data.blocks)
        self.stack = stack or stack_fn(schedule, L)
        self.args = (_stacked(data), jnp.asarray(data.x), jnp.asarray(data.cotangent))
        self._compiled = None

    def compiled(self):
        if self._compiled is None:
            self._compiled = jax.jit(step_fn(self.stack)).lower(*self.args).compile()
        return self._compiled

    def measure(self) -> ScheduleStatic:
        text = self.compiled().as_text()
        counted = (forward_dots(text, backward=False), forward_dots(text, backward=True))
        counted = None if None in counted else counted
        return ScheduleStatic(counted, self.peak_bytes(), PEAK_METHOD)

    def peak_bytes(self) -> int | None:
        """The temporaries that grow with the batch (see the module): the activations."""
        params, x, cotangent = self.args
        doubled = [
            jax.ShapeDtypeStruct((2 * a.shape[0], *a.shape[1:]), a.dtype) for a in (x, cotangent)
        ]
        wide = jax.jit(step_fn(self.stack)).lower(params, *doubled).compile()
        analyses = (self.compiled().memory_analysis(), wide.memory_analysis())
        if None in analyses:
            return None
        at_b, at_2b = (int(a.temp_size_in_bytes) for a in analyses)
        return max(0, at_2b - at_b)

    def values(self) -> Values:
        y, grads = jax.jit(_values(self.stack))(*self.args)
        return _per_block(y, grads)

    def step(self) -> None:
        jax.block_until_ready(self.compiled()(*self.args))


def _values(stack: Callable) -> Callable:
    def run(params, x, cotangent):
        y, pull_back = jax.vjp(lambda p: stack(p, x), params)
        return y, pull_back(cotangent)[0]

    return run


def _per_block(y, grads) -> Values:
    stacked = [np.asarray(g) for g in grads]
    L = stacked[0].shape[0]
    return Values(np.asarray(y), [tuple(g[i] for g in stacked) for i in range(L)])


def schedule_case(schedule: str | Schedule, data: Data) -> JaxScheduleCase:
    """The stack of `len(data.blocks)` blocks under `schedule` (nothing compiled yet)."""
    parsed = Schedule.parse(schedule)
    if parsed.name in SCHEDULES_NOT_EXPRESSIBLE:
        raise ValueError(
            f"schedule {parsed.label!r} is not expressible in JAX: "
            f"{SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
        )
    parsed.placement(len(data.blocks))  # a bad depth is refused here, naming the argument
    return JaxScheduleCase(parsed, data)


def canonical_values(schedule: str | Schedule, data: Data) -> Values:
    """The canonical's values: Flax's `nn.remat_scan` with the schedule's lengths for
    `nested`, else Flax's plain scanned stack (`remat_scan` with one level: no remat), which
    every schedule must equal."""
    parsed = Schedule.parse(schedule)
    L = len(data.blocks)
    lengths = parsed.args if parsed.name == "nested" else (L,)
    if math.prod(lengths) != L:
        raise ValueError(f"nested lengths {lengths} do not multiply to L={L}")
    return JaxScheduleCase(Schedule("nested", lengths), data).values()
