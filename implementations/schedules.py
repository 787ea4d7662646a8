"""Remat schedules: where the regions go over a stack of L blocks. Imports numpy only.

The bench's stack (`implementations/bench_case.py`) is L copies of the exercise's block
`Dense(F) -> relu -> Dense(F)`, blocks 0..L-1, block i mapping x_i to x_(i+1). A schedule
places checkpoint regions over it; the derivations are in docs/SCHEDULES.md.

- `none`: no region, every activation kept.
- `every`: each block its own region, the last one too (the bench's `full` mode).
- `segments(s)`: torch's `checkpoint_sequential(blocks, s, x)`: s consecutive segments, the
  first s-1 of L//s blocks each a region, the last (the rest) run plain, never recomputed.
  `segments(round(sqrt(L)))` is Chen et al. 2016's sqrt(L) schedule (`sqrt_segments`).
- `nested(l1,...,ld)`, `l1*...*ld == L`: Flax's `nn.remat_scan(lengths=...)`: l1 regions,
  each of l2 regions, ..., each of l_d plain blocks (every level but the innermost remat'd).
- `binomial(c)`: Revolve's optimal schedule with c snapshots (`implementations.revolve`),
  as nested regions; its last block plain.
- `optimal(m)`: the true optimum's placement within a peak of m units
  (`implementations.optimum`: the fewest block evaluations over every nested placement, several
  blocks taped at once where that pays), as nested regions.
- `budget(b)`: the framework's own solver under a memory budget b in [0, 1] (torch.compile's
  activation memory budget). It places no regions of its own, so it has no model but its
  bounds: between `every` (the leanest memory) and `none` (the fewest forwards).

**The model** (units, conventions): memory counts what is kept for the backward pass, in two
units: a block *input* x_i (B*F float32), kept by a region or a plain block, and a block's
*internals*, what the plain block keeps beyond its input: relu's output a (B*F float32; the
second Dense's input, relu's mask read off a > 0), never h. A region keeps its input only;
when the backward reaches it, it reruns its blocks (its last one too, for its internals) as
its inner placement says. The cotangent and the working value of the block being run are
the same for every schedule and not counted.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import optimum
from .regions import Item, Region, regions, show
from .regions import walk as _walk
from .revolve import (
    check_depth,
    optimal_forward_steps,
    optimal_split,
    revolve_forward_steps,
)

__all__ = [
    "SCHEDULE_NAMES",
    "Activations",
    "Departure",
    "FrontierPoint",
    "Model",
    "Region",
    "Schedule",
    "flat_stack",
    "regions",
    "revolve_forward_steps",
    "revolve_frontier",
    "show",
    "sqrt_segments",
]

SCHEDULE_NAMES = ("none", "every", "segments", "nested", "binomial", "optimal", "budget")
#: Bytes of one unit (an input, or a block's internals) per batch row and feature: float32.
UNIT_BYTES = 4

_CALL = re.compile(r"^(?P<name>\w+)\((?P<args>[^()]*)\)$")


def flat_stack(
    items: tuple[Item, ...], block: Callable, region: Callable[[Callable], Callable]
) -> Callable:
    """The placement's `items` as `run(x, *params)`, the parameters flat, four per block
    in block order: a block index runs `block(x, *its params)`, a `Region` runs
    `region(run of its items)`, the framework's checkpoint over them."""
    parts = [
        (region(flat_stack(item.items, block, region)), 4 * len(item.blocks))
        if isinstance(item, Region)
        else (block, 4)
        for item in items
    ]

    def run(x, *params):
        start = 0
        for function, count in parts:
            x = function(x, *params[start : start + count])
            start += count
        return x

    return run


@dataclass(frozen=True)
class Activations:
    """Kept for the backward pass: `inputs` block inputs, `internals` blocks' internals."""

    inputs: int
    internals: int

    @property
    def units(self) -> int:
        """Both, in B*F float32 tensors (the exercise's internals are one such tensor, a)."""
        return self.inputs + self.internals

    def bytes(self, batch: int, features: int) -> int:
        """The bytes at batch B and width F: `units * B * F * 4`."""
        rows, width = check_depth(batch, "batch"), check_depth(features, "features")
        return self.units * rows * width * UNIT_BYTES


@dataclass(frozen=True)
class Model:
    """A schedule's analytic model at one depth: peak kept activations, block forwards."""

    peak: Activations
    forwards: int


@dataclass(frozen=True)
class FrontierPoint:
    """Revolve with `snapshots` snapshots: its peak and its block forward evaluations."""

    snapshots: int
    peak: Activations
    forwards: int


@dataclass(frozen=True)
class Departure:
    """A known upstream behaviour that takes a schedule's measured figures outside its model.

    `reason`: one line. Where the behaviour is a count, it is stated, and the bench then
    explains a peak only up to what it predicts (`peak_units`):

    - `held_per_level`: units each open region holds beside the model while the backward
      pass is inside it (a reentrant backward's rerun output and cotangent);
    - `tape_to_the_end`: a backward pass frees nothing of what its trace keeps until it
      returns (autograd's), so a region's rerun adds to all its level kept.

    With neither, the reason explains any peak and count, as a reason in words must. Values
    and regions are never explained.
    """

    reason: str
    held_per_level: int | None = None
    tape_to_the_end: bool = False

    def __post_init__(self):
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError(f"a departure needs its reason in words, got {self.reason!r}")
        held = self.held_per_level
        if held is not None and (
            isinstance(held, bool) or not isinstance(held, numbers.Integral) or held < 1
        ):
            raise ValueError(f"held_per_level must be a positive integer or None, got {held!r}")
        if not isinstance(self.tape_to_the_end, bool):
            raise TypeError(f"tape_to_the_end must be a bool, got {self.tape_to_the_end!r}")

    @classmethod
    def of(cls, declared: Any) -> Departure:
        """A stack's declaration: a `Departure`, or its reason alone."""
        return declared if isinstance(declared, Departure) else cls(declared)

    @property
    def counted(self) -> bool:
        """Whether it states its count (then it explains a peak up to `peak_units` only)."""
        return self.held_per_level is not None or self.tape_to_the_end

    def peak_units(self, placement: tuple[Item, ...]) -> int:
        """The peak it predicts over `placement`, in units: the model's conventions, with
        `held_per_level` more units per open region and, with `tape_to_the_end`, nothing of a
        level freed while its backward runs. Without recursion: binomial(1) nests L-1 deep."""
        held, tape = self.held_per_level or 0, self.tape_to_the_end

        def peak(kept: int, freed: int, extra: int) -> int:
            return kept + extra if tape else max(kept, freed)

        # per open level: units kept so far; the largest rerun peak with what precedes it
        # kept (freed as the backward passes), and the largest alone (all kept to the end)
        frames = [[0, 0, 0]]
        opened = []  # per open region: the units its level had kept when it opened
        for _, item in _walk(placement):
            if item is None:  # a region closes: its rerun's peak, less the input it shares
                rerun = peak(*frames.pop()) + held - 1
                frames[-1][1] = max(frames[-1][1], opened.pop() + rerun)
                frames[-1][2] = max(frames[-1][2], rerun)
            elif isinstance(item, Region):
                frames[-1][0] += 1
                opened.append(frames[-1][0])
                frames.append([0, 0, 0])
            else:
                frames[-1][0] += 2
        return peak(*frames[0])

    def __str__(self) -> str:
        counts = []
        if self.tape_to_the_end:
            counts.append("each trace's tape kept until its backward returns")
        if self.held_per_level is not None:
            counts.append(f"{self.held_per_level} units more per level of nesting")
        return self.reason + (f" (accepted: {'; '.join(counts)})" if counts else "")


@dataclass(frozen=True)
class Schedule:
    """A schedule: one of `SCHEDULE_NAMES` and its arguments `args`.

    `Schedule.parse("segments(4)")`, `Schedule.parse("optimal(16)")`; errors name the
    argument. `placement(L)`, `peak_activations(L)` and `forward_evaluations(L)` are its
    model at depth L (`budget` has none: `bounds(L)`).
    """

    name: str
    args: tuple[Any, ...] = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or self.name not in SCHEDULE_NAMES:
            raise ValueError(f"schedule name must be one of {SCHEDULE_NAMES}, got {self.name!r}")
        if not isinstance(self.args, tuple):
            raise TypeError(f"schedule args must be a tuple, got {self.args!r}")
        object.__setattr__(self, "args", _checked_args(self.name, self.args))

    @classmethod
    def parse(cls, text: Any) -> Schedule:
        """A schedule from its spelling: `none`, `every`, `segments(s)`, `nested(l1,...)`,
        `binomial(c)`, `optimal(m)`, `budget(b)`."""
        if isinstance(text, Schedule):
            return text
        if not isinstance(text, str):
            raise TypeError(f"schedule must be a string such as 'segments(4)', got {text!r}")
        spelled = text.strip()
        if spelled in ("none", "every"):
            return cls(spelled)
        match = _CALL.match(spelled)
        if not match or match["name"] not in SCHEDULE_NAMES[2:]:
            raise ValueError(
                "schedule must be none, every, segments(s), nested(l1,...,ld), binomial(c), "
                f"optimal(m) or budget(b), got {text!r}"
            )
        name, raw = match["name"], [a.strip() for a in match["args"].split(",")]
        try:
            args = tuple(float(a) if name == "budget" else int(a) for a in raw)
        except ValueError:
            raise ValueError(
                f"schedule {text!r}: {_ARG[name]} must be {_WHAT[name]}, got {match['args']!r}"
            ) from None
        return cls(name, args)

    @property
    def label(self) -> str:
        """The schedule as it is spelled: `segments(4)`, `nested(8,8)`, `budget(0.5)`."""
        if not self.args:
            return self.name
        spelled = (f"{a:g}" if isinstance(a, float) else str(a) for a in self.args)
        return f"{self.name}({','.join(spelled)})"

    def __str__(self) -> str:
        return self.label

    @property
    def analytic(self) -> bool:
        """Whether the schedule places its own regions (all but `budget`)."""
        return self.name != "budget"

    def placement(self, L: int) -> tuple[Item, ...]:
        """The items over blocks 0..L-1: a block index runs plain, a `Region` is checkpointed."""
        L = self._depth(L)
        if self.name == "none":
            return tuple(range(L))
        if self.name == "every":
            return tuple(Region((i,)) for i in range(L))
        if self.name == "segments":
            size = L // self.args[0]
            checkpointed = tuple(
                Region(tuple(range(start, start + size)))
                for start in range(0, size * (self.args[0] - 1), size)
            )
            return checkpointed + tuple(range(size * (self.args[0] - 1), L))  # the tail: plain
        if self.name == "nested":
            return _nested(self.args, 0)
        if self.name == "optimal":
            return optimum.optimal_placement(L, self.args[0])
        return _binomial(L, self.args[0], 0)

    def peak_activations(self, L: int) -> Activations:
        """The most kept at once during the backward pass, in block inputs and blocks'
        internals (`.bytes(B, F)`: B*F*4 bytes each); derived in docs/SCHEDULES.md."""
        L = self._depth(L)
        if self.name == "none":
            return Activations(L, L)
        if self.name == "every":  # L inputs; the last block's recompute adds its internals
            return Activations(L, 1)
        if self.name == "segments":  # the s-1 regions' inputs beside the plain tail's blocks
            tail = L - (L // self.args[0]) * (self.args[0] - 1)
            return Activations(self.args[0] - 1 + tail, tail)
        if self.name == "nested":  # the last region at each level; an inner first input is
            # its region's own, so each level below the top adds l - 1
            return Activations(sum(self.args) - (len(self.args) - 1), self.args[-1])
        if self.name == "optimal":  # its placement's peak, walked (a = 1)
            return Activations(*optimum.peak_kept(self.placement(L)))
        # binomial: Revolve's c snapshots, the state in hand, one taped block
        return Activations(min(self.args[0], L - 1) + 1, 1)

    def forward_evaluations(self, L: int) -> int:
        """Block forward evaluations in one training step: the forward pass (L) and every
        region's rerun, a region rerunning all its blocks, its last one included."""
        L = self._depth(L)
        if self.name == "none":
            return L
        if self.name == "every":
            return 2 * L
        if self.name == "segments":  # the plain tail is never rerun
            return L + (L // self.args[0]) * (self.args[0] - 1)
        if self.name == "nested":  # each remat'd level reruns every block once
            return len(self.args) * L
        if self.name == "optimal":
            return optimum.optimal_evaluations(L, self.args[0])
        # binomial: Revolve's advances, plus each block once taped
        return optimal_forward_steps(L, self.args[0]) + L

    def model(self, L: int) -> Model:
        """`peak_activations(L)` and `forward_evaluations(L)` together."""
        return Model(self.peak_activations(L), self.forward_evaluations(L))

    def bounds(self, L: int) -> tuple[Model, Model]:
        """(the leanest-memory model, the fewest-forwards model) the schedule may reach: its
        own model twice, or for `budget` `every`'s and `none`'s."""
        if self.analytic:
            return self.model(L), self.model(L)
        return EVERY.model(L), NONE.model(L)

    def _depth(self, L: Any) -> int:
        L = check_depth(L)
        if self.name == "budget":
            raise ValueError(
                f"{self.label} has no analytic model: the framework's solver places it "
                "(see bounds(L): between every and none)"
            )
        if self.name == "segments" and self.args[0] > L:
            raise ValueError(f"segments({self.args[0]}) needs s <= L, got L={L}")
        if self.name == "optimal" and self.args[0] < optimum.least_peak(L):
            raise ValueError(
                f"optimal({self.args[0]}): m must be at least {optimum.least_peak(L):g} "
                f"units at L={L} (one checkpoint and one taped block), got {self.args[0]}"
            )
        if self.name == "nested" and math.prod(self.args) != L:
            raise ValueError(
                f"nested lengths {self.args} multiply to {math.prod(self.args)}, "
                f"not L={L} (the product of l1..ld must be L)"
            )
        return L


_ARG = {"segments": "s", "nested": "lengths", "binomial": "c", "optimal": "m", "budget": "b"}
_WHAT = {
    "segments": "a positive integer",
    "nested": "positive integers",
    "binomial": "a positive integer",
    "optimal": "a positive integer (units)",
    "budget": "a number in [0, 1]",
}


def _checked_args(name: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    if name in ("none", "every"):
        if args:
            raise ValueError(f"schedule {name!r} takes no arguments, got args={args!r}")
        return ()
    arg = _ARG[name]
    if name != "nested" and len(args) != 1:
        raise ValueError(f"{name}({arg}) takes one argument {arg}, got {len(args)}: {args!r}")
    if name == "budget":
        value = args[0]
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"budget(b): b must be a number in [0, 1], got {value!r}")
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"budget(b): b must be a fraction in [0, 1], got {value!r}")
        return (float(value),)
    if not args:
        raise ValueError("nested(l1,...,ld): lengths must name at least one level, got none")
    return tuple(check_depth(value, arg) for value in args)


def _nested(lengths: tuple[int, ...], start: int) -> tuple[Item, ...]:
    """remat_scan's placement: every level but the innermost is a run of regions."""
    if len(lengths) == 1:
        return tuple(range(start, start + lengths[0]))
    size = math.prod(lengths[1:])
    return tuple(Region(_nested(lengths[1:], start + i * size)) for i in range(lengths[0]))


def _binomial(L: int, c: int, start: int) -> tuple[Item, ...]:
    """Revolve's schedule from the recursion's splits: advance k blocks from a snapshot
    (a region over them, reversed later with all c snapshots), the rest with c - 1.

    Built with a stack of open chains, not recursion: binomial(1) nests L-1 regions deep.
    """
    chains = [[L, c, start, []]]  # each: blocks left, snapshots left, next block, items
    while True:
        left, snaps, first, items = chains[-1]
        if left > 1:  # open the region over the next k blocks, reversed with all snaps
            chains.append([optimal_split(left, snaps), snaps, first, []])
            continue
        items.append(first)  # the last block is taped straight from the state in hand
        chains.pop()
        if not chains:
            return tuple(items)
        region, parent = Region(tuple(items)), chains[-1]
        parent[3].append(region)  # the rest of the parent's blocks, with a snapshot fewer
        parent[0], parent[1], parent[2] = (
            parent[0] - len(region.blocks),
            parent[1] - 1,
            region.blocks.stop,
        )


def sqrt_segments(L: int) -> Schedule:
    """Chen et al. 2016's schedule: `segments(round(sqrt(L)))`."""
    return Schedule("segments", (max(1, round(math.sqrt(check_depth(L)))),))


def revolve_frontier(L: int) -> tuple[FrontierPoint, ...]:
    """The optimal trade-off at depth L: for each c in 1..max(1, L-1) (more snapshots change
    nothing), `binomial(c)`'s peak and forward evaluations."""
    L = check_depth(L)
    points = []
    for c in range(1, max(1, L - 1) + 1):
        model = Schedule("binomial", (c,)).model(L)
        points.append(FrontierPoint(c, model.peak, model.forwards))
    return tuple(points)


NONE = Schedule("none")
EVERY = Schedule("every")
