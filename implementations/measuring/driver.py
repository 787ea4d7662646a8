"""A stack's block and instrument as the bench module `conformance.benchmark` reads
(`implementations.bench_case`'s interface), naming no framework. Imports numpy only.

A stack's `block` module offers `FRAMEWORK`, `POLICIES` (policy -> how its regions run it;
empty: its checkpoint takes none), `NOT_EXPRESSIBLE` (policy, schedule or mode -> why not),
`DEPARTURES` (schedule -> `Departure`), `REGION` (its region in words), `place(placement)`
(`run(x, *params)`), `vjp(run, params, x, cotangent, wrt)` (`(y, grads)`: the call measured),
`from_numpy(array)` and `versions()`. Its `instrument` module offers `watch(x, params)` and
`peak()`, contexts around that call whose `.record()` is a `Record`, and may offer
`PEAK_NOT_SPLIT`: why its peak cannot be split by batch (`split_peak`).

The bench's depth modes are placements: `none` no region, `full` a region per block
(`every`); a policy bench's policy runs every block's region under it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ..bench_case import Data, ScheduleStatic, Static, Values
from ..policies import POLICY_NAMES
from ..schedules import SCHEDULE_NAMES, Schedule
from .placement import Placement
from .record import NotObservable, Record, known, observed, split_by_batch

#: Each schedule's placement in words (`SCHEDULES`' lines say it with the stack's region).
PLACED = {
    "none": "the plain blocks",
    "every": "a region per block",
    "segments": "a region over each of the first s-1 segments, the tail plain",
    "nested": "regions nested as the placement nests",
    "binomial": "Revolve's placement tree, its regions nested",
}
#: What a stack's block and instrument modules offer (the module docstring says each).
BLOCK_NAMES = (
    "FRAMEWORK",
    "POLICIES",
    "NOT_EXPRESSIBLE",
    "DEPARTURES",
    "REGION",
    "place",
    "vjp",
    "from_numpy",
    "versions",
)
INSTRUMENT_NAMES = ("watch", "peak")
#: The depth bench's modes as schedules.
MODE_SCHEDULES = {"none": "none", "full": "every"}


def bench_module(name: str) -> Any:
    """The bench module `name` names: a stack's `block` module (it declares `place`) as a
    `StackBench` over it and its sibling `instrument`, any other module as it is."""
    module = importlib.import_module(name)
    if not callable(getattr(module, "place", None)):
        return module
    return StackBench(module, importlib.import_module(f"{name.rpartition('.')[0]}.instrument"))


class StackBench:
    """The bench module of one stack, built from its `block` and `instrument` modules."""

    def __init__(self, block: ModuleType, instrument: ModuleType):
        for module, names in ((block, BLOCK_NAMES), (instrument, INSTRUMENT_NAMES)):
            missing = [n for n in names if not hasattr(module, n)]
            if missing:
                raise TypeError(f"{module.__name__} lacks {', '.join(missing)}")
        self.block, self.instrument = block, instrument
        self.FRAMEWORK = block.FRAMEWORK
        refused = dict(block.NOT_EXPRESSIBLE)
        self.MODES = tuple(m for m in ("none", "full", "save-mm") if m not in refused)
        self.POLICIES = ("none", "full", *(p for p in block.POLICIES if p in POLICY_NAMES))
        self.NOT_EXPRESSIBLE = {
            k: v for k, v in refused.items() if k in POLICY_NAMES and k not in SCHEDULE_NAMES
        }
        self.SCHEDULES = {
            name: f"{words}, each region {block.REGION}"
            for name, words in PLACED.items()
            if name not in refused
        }
        self.SCHEDULES_NOT_EXPRESSIBLE = {k: v for k, v in refused.items() if k in SCHEDULE_NAMES}
        self.SCHEDULE_DEPARTURES = dict(block.DEPARTURES)

    def __repr__(self) -> str:
        return f"StackBench({self.block.__name__})"

    def versions(self) -> dict[str, str]:
        return self.block.versions()

    def configurations(self) -> list[tuple[str, str]]:
        """Every `(variant, mode)`: one variant, the stack's own call."""
        return [("", mode) for mode in self.MODES]

    def build(self, variant: str, mode: str, data: Data) -> DepthCase:
        """The depth bench's case for one mode."""
        if variant != "":
            raise ValueError(f"variant: {self.FRAMEWORK} runs one way only (''), got {variant!r}")
        if mode not in self.MODES:
            raise ValueError(f"unknown mode {mode!r}; {self.FRAMEWORK} runs {self.MODES}")
        schedule = MODE_SCHEDULES.get(mode, "every")
        policy = getattr(self.block, "SAVE_MM_POLICY", "") if mode == "save-mm" else ""
        return DepthCase(self, Placement.of(schedule, len(data.blocks), policy), data, mode)

    def policy_case(self, policy: str, data: Data) -> DepthCase:
        """`bench --policies`' case: `none`, or every block's region under `policy`."""
        if policy in MODE_SCHEDULES:
            return self.build("", policy, data)
        if policy not in self.POLICIES:
            raise ValueError(f"policy {policy!r} is not expressible in {self.FRAMEWORK}")
        return DepthCase(self, Placement.of("every", len(data.blocks), policy), data, policy)

    def schedule_case(self, schedule: Any, data: Data) -> ScheduleCase:
        """`bench --schedules`' case: the stack of `len(data.blocks)` blocks under `schedule`."""
        parsed = Schedule.parse(schedule)
        if parsed.name in self.SCHEDULES_NOT_EXPRESSIBLE:
            raise ValueError(
                f"schedule {parsed.label!r} is not expressible in {self.FRAMEWORK}: "
                f"{self.SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
            )
        return ScheduleCase(self, Placement.of(parsed, len(data.blocks)), data, parsed.label)


class PlacedCase:
    """A placement at one depth on the given data: the block's call, and its records."""

    def __init__(self, stack: StackBench, placement: Placement, data: Data):
        self.framework, self.stack, self.placement = stack.FRAMEWORK, stack, placement
        convert = stack.block.from_numpy
        self.params = [convert(a) for arrays in data.blocks for a in arrays]
        self.x, self.cotangent = convert(data.x), convert(data.cotangent)
        self.run = stack.block.place(placement)

    def call(self, wrt: str = "params") -> tuple[Any, Sequence[Any]]:
        """The call every figure comes from: `(y, gradients)` with respect to `wrt`."""
        return self.stack.block.vjp(self.run, self.params, self.x, self.cotangent, wrt)

    def counts(self, wrt: str = "params") -> Record:
        """The call under the instrument's watch."""
        with self.stack.instrument.watch(self.x, self.params) as seen:
            self.call(wrt)
        return seen.record()

    def peak(self, wrt: str = "params") -> Record:
        """The call under the instrument's peak."""
        with self.stack.instrument.peak() as held:
            self.call(wrt)
        return held.record()

    def record(self, wrt: str = "params") -> Record:
        """Every figure of the call: watched, then its peak."""
        return self.counts(wrt).merged(self.peak(wrt))

    def step(self) -> None:
        self.call()  # eager: done when it returns


class DepthCase(PlacedCase):
    """The depth bench's case (`implementations.bench_case.Case`)."""

    def __init__(self, stack: StackBench, placement: Placement, data: Data, mode: str):
        super().__init__(stack, placement, data)
        self.variant, self.mode, self.depth = "", mode, placement.depth

    def residuals(self) -> tuple:
        return self.counts().saved

    def peak_bytes(self) -> int:
        return self.peak().peak_bytes

    def measure(self) -> Static:
        found = self.record()
        passes = (known(found.forward_matmuls), known(found.backward_matmuls))
        matmuls = None if None in passes else sum(passes)
        return Static(found.saved, peak_bytes=known(found.peak_bytes), matmuls=matmuls)


class ScheduleCase(PlacedCase):
    """`bench --schedules`' case (`implementations.bench_case.ScheduleCase`): counts on the
    parameters' gradient, the peak on x's (no parameter gradient to leave out)."""

    def __init__(self, stack: StackBench, placement: Placement, data: Data, label: str):
        super().__init__(stack, placement, data)
        self.schedule = label

    def measure(self) -> ScheduleStatic:
        counts, held = self.counts(), self.peak("x")
        matmuls = (counts.block_matmuls("forward"), counts.block_matmuls("backward"))
        method = str(held.peak_bytes)  # not observable: its reason
        if observed(held.peak_bytes):
            method = f"{held.methods['peak_bytes']}, the gradient with respect to x"
        return ScheduleStatic(matmuls, known(held.peak_bytes), method, known(counts.regions))

    def values(self) -> Values:
        y, grads = self.call()
        grads = [np.asarray(g) for g in grads]
        return Values(np.asarray(y), [tuple(grads[i : i + 4]) for i in range(0, len(grads), 4)])


def split_peak(case: PlacedCase, doubled: PlacedCase, wrt: str = "params") -> Record:
    """`case`'s record with its peak split by batch, from `doubled`, the same placement on
    twice the batch (`record.split_by_batch`)."""
    regions = sum(1 for _ in case.placement.regions())
    unsplit = getattr(case.stack.instrument, "PEAK_NOT_SPLIT", "")
    if unsplit:  # an instrument whose peak is not linear in the batch says why, and keeps it
        reason = NotObservable(unsplit)
        return dataclasses.replace(
            case.record(wrt), peak_batch_bytes=reason, peak_fixed_bytes=reason
        )
    return split_by_batch(case.record(wrt), doubled.peak(wrt), regions)
