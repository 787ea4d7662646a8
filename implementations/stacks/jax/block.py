"""The exercise's block in JAX, and the one builder that places it over L blocks. Imports jax
(Flax only for `canonical_values`).

- `block(params, x)`: `relu(x @ w1 + b1) @ w2 + b2`, kernels `(in, out)` as Flax's, h tagged
  by `checkpoint_name` for `save_named` (an identity otherwise). Flax linen `nn.checkpoint`,
  NNX `nnx.remat`, Equinox `eqx.filter_checkpoint` and Haiku `hk.remat` all lower to
  `jax.checkpoint`, so the bench is written against it.
- `place(placement)`: `run(stacked, x)`, the placement's blocks over the parameters stacked
  `(L, ...)`, each region a `jax.checkpoint` (its policy's function), nested as the placement
  nests. One program structure for every schedule: each run of two or more alike items
  (plain blocks, or regions of one shape and policy) is one `lax.scan` over their stacked
  parameters, as `nn.remat_scan` builds its levels; a lone item is called as it is. So none,
  every, segments and nested are loops (at L >= 2). The run keeps its `placement`.
- `removed_reruns(placement)`: the count model of the reruns XLA:CPU removes from this
  builder's program (`REMOVED`): the instrument holds the compiled program to it.
- `vjp(run, params, x, cotangent, wrt)`: the call every measurement watches: `jax.vjp` of
  the run and its pullback, one jitted program, finished when it returns. It hands its
  program to the instrument's watchers (`WATCHERS`) before it runs.

Declarations (`implementations.measuring.driver` reads them): the policies a region runs
(`POLICIES`), what JAX cannot express (`NOT_EXPRESSIBLE`), and where its figures depart
from the model (`DEPARTURES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from implementations import optimum
from implementations.bench_case import Data, Values
from implementations.contract import installed_versions
from implementations.measuring.departure import CountModel
from implementations.measuring.placement import Placement
from implementations.policies import Policy
from implementations.schedules import Departure, Item, Region, Schedule

from . import policies as jax_policies

#: The plan's code (`python -m conformance plan`): a placement's regions with JAX's own API,
#: `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """import jax

def run(items, params, x):  # block(p, x): your block; params: one p per block
    for item in items:
        if isinstance(item, list):
            x = jax.checkpoint(lambda p, x, item=item: run(item, p, x))(params, x)
        else:
            x = block(params[item], x)
    return x

y = run($placement, params, x)"""
#: a: what a taped block keeps beside its input, in B x F float32 tensors: relu's output and
#: its boolean mask (one byte an element: a quarter unit).
INTERNALS_UNITS = 1.25
FRAMEWORK = "jax"
#: Policy -> how a region runs it (`jax.checkpoint(block, policy=...)`).
POLICIES = {
    name: f"jax.checkpoint(block, policy={spelling})"
    for name, spelling in jax_policies.SPELLINGS.items()
}
#: The depth bench's `save-mm`: the matmul outputs saved.
SAVE_MM_POLICY = "save_dots"
REGION = (
    "a jax.checkpoint; each run of two or more alike items (blocks, or regions of one shape) "
    "a lax.scan, as nn.remat_scan's levels; a lone item called as it is, unrolled (most of "
    "binomial's, whose regions differ in size)"
)
#: The gradient `bench --schedules` measures the peak of: XLA drops what the x-gradient does
#: not need (x and a, kept only for the kernels' gradients), so its peak is of another program;
#: the parameters' gradients are left out by the method (the part that grows with the batch).
PEAK_WRT = "params"
NOT_EXPRESSIBLE = {
    "budget": "JAX has no memory-budget solver: jax.checkpoint's policies name what to save "
    "per op, not how much",
}
#: Why `removed_reruns` counts what it counts (the instrument names it).
REMOVED = (
    "a region of one block with no loop of its own reruns x @ W1 once, the computation its "
    "enclosing pass already ran; XLA:CPU merges it (cse_barrier_expander before HloCSE, "
    "xla/service/cpu/cpu_compiler.cc; a loop of one trip is removed first)"
)
#: segments' peak (measured at B = 256, F = 64 from the compiled program's schedule and buffer
#: assignment, XLA_FLAGS=--xla_dump_to): scan's stacked outputs start as one zero array per
#: shape (jax `_empty_array`), and copy insertion gives each while loop its own copy of its init
#: (`AddCopiesForWhile`, "(1) The init value is copied before the kWhile"). With one region
#: (s = 2) its rerun is a loop of its own that needs no cotangent, and the entry's schedule
#: makes every copy first: both tapes' x and relu-output stacks (4 stacks), the f32 zero stack
#: they are copied from and the mask's pred zero stack (a - 1 a block) live at once at the
#: fourth copy, beside the copies of x and the cotangent (2 units): 5.25 L/2 + 2 at B = 256,
#: F = 64, every even L from 8 to 64 (L = 4: 13.73 of 12.5, the heap's packing). With s >= 3
#: the regions are a loop whose body reruns one region: its tape's copies are made inside
#: that body, and the peak is the schedule model's at a = INTERNALS_UNITS (the mask a quarter
#: unit a block).
SEGMENTS = (
    "scan's stacked outputs start as copies of one zero stack per shape, each while loop's "
    "init copied before the loop; with one region (s = 2) its rerun needs no cotangent and "
    "every copy is made at the program's start: both tapes' x and relu stacks, the zero stack "
    "and the mask's beside x's and the cotangent's copies; with s >= 3 the model at a = 1.25"
)
SEGMENTS_SOURCE = (
    "jax/_src/lax/control_flow/loops.py:640 yss = _empty_array(...) in _scan_impl (jax 0.10.2); "
    "xla/service/copy_insertion.cc AddCopiesForWhile: (1) the init value is copied before the "
    "kWhile instruction"
)


def segments_peak(items: tuple[Item, ...]) -> float:
    """`SEGMENTS`' peak in units over a segments placement's `items`: with one region of r
    blocks beside a plain tail of t, where r = t (s divides L) the four f32 stacks of both
    tapes (x, relu's output) and the f32 and the mask's zero stacks they are copied from,
    alive at the fourth copy (before the masks' copies); where r != t (two shapes, odd L)
    both tapes (a + 1 a block), their zero stacks freed before the peak (measured at L = 5,
    7, 9, 33); each with 2 copies (x, the cotangent). With more regions the schedule model's
    at a = `INTERNALS_UNITS`."""
    regions = [item for item in items if isinstance(item, Region)]
    if len(regions) != 1:
        return optimum.placement_cost(items, INTERNALS_UNITS)[0]
    region, tail = len(regions[0].blocks), len(items) - 1
    if region == tail:
        return (4 + 1 + (INTERNALS_UNITS - 1)) * region + 2
    return (1 + INTERNALS_UNITS) * (region + tail) + 2


#: The backward of a scan is a scan whose carry is the cotangent, alive across each inner
#: level's loop: one unit per open level (`Departure.peak_units`).
_SCAN_CARRY = Departure(
    "remat_scan's backward is a scan per level: each open level's loop holds its carry, "
    "the cotangent, while the level inside it runs",
    held_per_level=1,
)
#: Where a schedule's figures leave the model, each a count the bench holds its figure to.
DEPARTURES = {
    "segments": CountModel(SEGMENTS, SEGMENTS_SOURCE, {"peak_units": segments_peak}),
    "nested": CountModel(
        str(_SCAN_CARRY),
        "jax/_src/lax/control_flow/loops.py:1051 _scan_transpose_fancy (jax 0.10.2), the "
        "transpose of each level's scan from flax/linen/transforms.py:1087 remat_scan "
        "(flax 0.12.8)",
        {"peak_units": _SCAN_CARRY.peak_units},
    ),
}
#: The gradients `vjp` takes: of the parameters, or of x.
WRT = ("params", "x")
#: Watchers of `vjp`'s programs (the instrument's `watch` and `peak` add themselves here).
WATCHERS: list[Any] = []


def block(params: Sequence[jax.Array], x: jax.Array) -> jax.Array:  # (B, F) -> (B, F)
    """`relu(x @ w1 + b1) @ w2 + b2`, h tagged for `save_named`."""
    w1, b1, w2, b2 = params  # kernels (F, F) as (in, out), biases (F,)
    # Biases as (1, F): explicit broadcasting, which strict rank promotion allows.
    h = jax_policies.tag(x @ w1 + b1[None, :])
    return jax.nn.relu(h) @ w2 + b2[None, :]


def _checkpoint(run: Callable, policy: str) -> Callable:
    if policy == "":
        return jax.checkpoint(run)  # prevent_cse=True, as every front's wrapper
    if policy not in POLICIES:
        reason = NOT_EXPRESSIBLE.get(policy, f"JAX has no policy {policy!r}")
        raise ValueError(f"placement: policy {policy!r} is not expressible in JAX: {reason}")
    return jax.checkpoint(run, policy=jax_policies.policy_function(Policy.parse(policy)))


def _shape(item: Item, policy_of: Callable[[Region], str]) -> Any:
    """What makes items alike: blocks alike, regions of one nesting and policy alike."""
    if isinstance(item, Region):
        return (policy_of(item), tuple(_shape(i, policy_of) for i in item.items))
    return "block"


def _size(item: Item) -> int:
    return len(item.blocks) if isinstance(item, Region) else 1


def _item(item: Item, policy_of: Callable[[Region], str]) -> Callable:
    """`run(params, x)` of one item: a block's parameters as they are, a region's of more than
    one block stacked `(size, ...)`; a region is a `jax.checkpoint` of its items."""
    if not isinstance(item, Region):
        return block
    inner = (
        _item(item.items[0], policy_of) if len(item.items) == 1 else _items(item.items, policy_of)
    )
    return _checkpoint(inner, policy_of(item))


def _items(items: tuple[Item, ...], policy_of: Callable[[Region], str]) -> Callable:
    """`run(stacked, x)` over the items' blocks (stacked `(n, ...)` in block order): each run of
    two or more alike items one `lax.scan` over their parameters (`(count, size, ...)`, or
    `(count, ...)` for items of one block), a lone item called as it is."""
    runs: list[list] = []  # [count, size, shape, run]
    for item in items:
        shape = _shape(item, policy_of)
        if runs and runs[-1][2] == shape:
            runs[-1][0] += 1
        else:
            runs.append([1, _size(item), shape, _item(item, policy_of)])
    total = sum(count * size for count, size, _, _ in runs)

    def run(stacked, x):
        start = 0
        for count, size, _, body in runs:
            part = stacked
            if count * size != total:  # a part of the blocks: sliced
                part = tuple(p[start : start + count * size] for p in stacked)
            if count > 1 and size > 1:
                part = tuple(p.reshape((count, size, *p.shape[1:])) for p in part)
            if count > 1:
                x = jax.lax.scan(lambda h, p, body=body: (body(p, h), None), x, part)[0]
            else:  # one item: called as it is, no loop of one
                x = body(part if size > 1 else tuple(p[0] for p in part), x)
            start += count * size
        return x

    return run


def place(placement: Placement) -> Callable[..., Any]:
    """`run(stacked, x)`: the placement's blocks and regions over parameters stacked `(L, ...)`,
    `run.placement` the placement."""
    run = _items(placement.items, _policies(placement))
    run.placement = placement
    return run


def _policies(placement: Placement) -> Callable[[Region], str]:
    """Region -> its policy, by its number in `placement.regions()`."""
    numbers = {id(region): n for n, (_, region) in enumerate(placement.regions())}
    return lambda region: placement.policy_of(numbers[id(region)])


def removed_reruns(placement: Placement) -> int:
    """The forward matmuls XLA:CPU removes from `place(placement)`'s backward (`REMOVED`): one
    per rerun of a region of one block that is not one of a run of alike items (no loop of
    its own), at any level, times the loops around it."""
    policy_of = _policies(placement)

    def removed(items: tuple[Item, ...], times: int) -> int:
        shapes = [_shape(item, policy_of) for item in items]
        total = 0
        for i, item in enumerate(items):
            if not isinstance(item, Region):
                continue
            run = sum(1 for j in (i - 1, i + 1) if 0 <= j < len(items) and shapes[j] == shapes[i])
            total += times * (len(item.blocks) == 1 and not run)
            # a run's items share one loop body: counted from its first item, times the run
            if i == 0 or shapes[i - 1] != shapes[i]:
                count = 1
                while i + count < len(items) and shapes[i + count] == shapes[i]:
                    count += 1
                total += removed(item.items, times * count)
        return total

    return removed(placement.items, 1)


class StackedGrads(Sequence):
    """The parameters' gradients, flat (four a block, in block order), read off the stacked
    `(L, ...)` ones only when asked for: the call measured does not unstack them."""

    def __init__(self, stacked: tuple[jax.Array, ...]):
        self.stacked = stacked

    def __len__(self) -> int:
        return 4 * self.stacked[0].shape[0]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} gradients")
        index %= len(self)
        return self.stacked[index % 4][index // 4]


#: The latest cases' stacked parameters, jitted programs and their executables (a bench builds
#: one case at a time).
_KEPT = 8
_stacks: dict[tuple[int, ...], tuple[tuple, tuple]] = {}
_programs: dict[tuple[int, str], tuple[Callable, Callable]] = {}
_executables: dict[tuple, tuple[Callable, Any]] = {}


def _keep(cache: dict, key: Any, value: Any) -> None:
    """`cache[key] = value`, the oldest entries dropped beyond `_KEPT`."""
    cache[key] = value
    while len(cache) > _KEPT:
        cache.pop(next(iter(cache)))


def stacked(params: Sequence[jax.Array]) -> tuple[jax.Array, ...]:
    """The flat parameters (four a block) stacked `(L, ...)` per kind, made once per list."""
    key = tuple(map(id, params))
    if key not in _stacks:  # the params kept with their stack: their ids stay theirs
        _keep(_stacks, key, (tuple(params), tuple(jnp.stack(params[i::4]) for i in range(4))))
    return _stacks[key][1]


def program(run: Callable, wrt: str) -> tuple[Callable, Callable]:
    """`(forward, step)`: `forward(stacked, x)` the run, `step(stacked, x, cotangent)` its
    `jax.vjp` and pullback, `(y, gradients)` with respect to `wrt`, jitted once per run."""
    if wrt not in WRT:
        raise ValueError(f"wrt must be one of {WRT}, got {wrt!r}")
    key = (id(run), wrt)
    if key not in _programs or _programs[key][0] is not run:

        def step(stacked, x, cotangent):
            if wrt == "params":
                y, pullback = jax.vjp(lambda p: run(p, x), stacked)
            else:
                y, pullback = jax.vjp(lambda x: run(stacked, x), x)
            return y, pullback(cotangent)[0]

        _keep(_programs, key, (run, jax.jit(step)))
    return run, _programs[key][1]


def executable(step: Callable, args: tuple) -> Any:
    """`step` (a jitted program of `program`) lowered and compiled for `args`' shapes, once:
    the instrument reads this executable and the call runs it. A jitted function's own call
    does not reuse an ahead-of-time compile (jax 0.10: it compiles the program again)."""
    key = (id(step), *((a.shape, a.dtype) for a in jax.tree.leaves(args)))
    if key not in _executables or _executables[key][0] is not step:
        _keep(_executables, key, (step, step.lower(*args).compile()))
    return _executables[key][1]


def vjp(
    run: Callable, params: Sequence[jax.Array], x: jax.Array, cotangent: jax.Array, wrt: str
) -> tuple[jax.Array, Sequence[jax.Array]]:
    """`(y, gradients)`: `jax.vjp` of `run` with respect to the parameters (`wrt="params"`,
    flat, four a block) or x, and its pullback of `cotangent`, done when it returns."""
    forward, step = program(run, wrt)
    args = (stacked(params), x, cotangent)
    for watcher in WATCHERS:
        watcher.saw(forward, step, args, wrt)
    y, grads = jax.block_until_ready(executable(step, args)(*args))
    return y, StackedGrads(grads) if wrt == "params" else (grads,)


def from_numpy(array: np.ndarray) -> jax.Array:
    """JAX's array for the bench's data."""
    return jnp.asarray(array)


def versions() -> dict[str, str]:
    """The installed jax and jaxlib."""
    return installed_versions(("jax", "jaxlib"))


# -- the canonical --------------------------------------------------------------------------


def canonical_values(schedule: str | Schedule, data: Data) -> Values:
    """The canonical's values for `schedule`: its placement as Flax linen builds it
    (`flax_placement.module`: `nn.remat_scan` with the schedule's lengths, or Revolve's regions
    as nested `nn.checkpoint`s), which every schedule of every framework must equal."""
    from . import flax_placement  # Flax for the canonical alone

    parsed = Schedule.parse(schedule)
    L = len(data.blocks)
    module, layout = flax_placement.module(parsed, L, data.x.shape[-1])
    variables = {"params": layout.variables(data.blocks)}

    def values(variables, x, cotangent):
        y, pullback = jax.vjp(lambda v: module.apply(v, x), variables)
        return y, pullback(cotangent)[0]

    y, grads = jax.jit(values)(variables, jnp.asarray(data.x), jnp.asarray(data.cotangent))
    return Values(np.asarray(y), layout.gradients(grads["params"], L))
