"""A stack's block and instrument as the bench module `conformance.benchmark` reads
(`implementations.bench_case`'s interface), naming no framework. Imports numpy only.

A stack's `block` module offers `FRAMEWORK`, `POLICIES` (policy -> how its regions run it;
empty: its checkpoint takes none), `NOT_EXPRESSIBLE` (policy, schedule or mode -> why not),
`DEPARTURES` (schedule -> `Departure`), `REGION` (its region in words), `place(placement)`
(`run(x, *params)`), `vjp(run, params, x, cotangent, wrt)` (`(y, grads)`: the call measured),
`from_numpy(array)` and `versions()`. Its `instrument` module offers `watch(x, params)` and
`peak()`, contexts around that call whose `.record()` is a `Record`, and may offer
`PEAK_NOT_SPLIT`: why its peak cannot be split by batch (`split_peak`).

Optional: a block's `VARIANTS` (the programs it runs; the first is `vjp`'s own, watched) and
`program(run, variant)` (`vjp` of the parameters as another program, called
`(params, x, cotangent)`); the instrument's `program(step, args, variant)` (a `Record` of that
program's own counts) and `SEES_FROM` (the smallest allocation its `peak()` sees: its peak is
then read at batches that reach it, `batch_peak`, and the depth bench shows none).

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
    "optimal": "the optimum's placement tree (implementations.optimum), its regions nested",
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
        self.INTERNALS_UNITS = getattr(block, "INTERNALS_UNITS", None)  # the plan's a
        self.VARIANTS = tuple(getattr(block, "VARIANTS", ("",)))
        if hasattr(block, "canonical_values"):  # the canonical's stack: every value's reference
            self.canonical_values = block.canonical_values

    def __repr__(self) -> str:
        return f"StackBench({self.block.__name__})"

    def versions(self) -> dict[str, str]:
        return self.block.versions()

    def configurations(self) -> list[tuple[str, str]]:
        """Every `(variant, mode)`: the block's programs (one, the stack's own call, unless
        it declares `VARIANTS`)."""
        return [(variant, mode) for variant in self.VARIANTS for mode in self.MODES]

    def build(self, variant: str, mode: str, data: Data) -> DepthCase:
        """The depth bench's case for one mode."""
        if variant not in self.VARIANTS:
            raise ValueError(f"variant: {self.FRAMEWORK} runs {self.VARIANTS}, got {variant!r}")
        if mode not in self.MODES:
            raise ValueError(f"unknown mode {mode!r}; {self.FRAMEWORK} runs {self.MODES}")
        schedule = MODE_SCHEDULES.get(mode, "every")
        policy = getattr(self.block, "SAVE_MM_POLICY", "") if mode == "save-mm" else ""
        placement = Placement.of(schedule, len(data.blocks), policy)
        return DepthCase(self, placement, data, mode, variant)

    def policy_case(self, policy: str, data: Data) -> DepthCase:
        """`bench --policies`' case: `none`, or every block's region under `policy`."""
        if policy in MODE_SCHEDULES:
            return self.build(self.VARIANTS[0], policy, data)
        if policy not in self.POLICIES:
            raise ValueError(f"policy {policy!r} is not expressible in {self.FRAMEWORK}")
        placement = Placement.of("every", len(data.blocks), policy)
        return DepthCase(self, placement, data, policy, self.VARIANTS[0])

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

    def __init__(self, stack: StackBench, placement: Placement, data: Data, variant: str = ""):
        self.framework, self.stack, self.placement = stack.FRAMEWORK, stack, placement
        self.data, self.variant = data, variant
        convert = stack.block.from_numpy
        self.params = [convert(a) for arrays in data.blocks for a in arrays]
        self.x, self.cotangent = convert(data.x), convert(data.cotangent)
        self.run = stack.block.place(placement)
        own = variant in ("", stack.VARIANTS[0])
        self.program = None if own else stack.block.program(self.run, variant)

    def call(self, wrt: str = "params") -> tuple[Any, Sequence[Any]]:
        """The call every figure comes from: `(y, gradients)` with respect to `wrt` (the
        parameters' through the variant's program, where it has one)."""
        if self.program is not None and wrt == "params":
            return self.program(self.params, self.x, self.cotangent)
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

    def __init__(
        self, stack: StackBench, placement: Placement, data: Data, mode: str, variant: str = ""
    ):
        super().__init__(stack, placement, data, variant)
        self.mode, self.depth = mode, placement.depth

    def residuals(self) -> tuple:
        return self.counts().saved

    def peak_bytes(self) -> int:
        return self.peak().peak_bytes

    def measure(self) -> Static:
        """Saved from the watched call (a variant's program watched as its eager code runs),
        matmuls from the variant's program itself where it has one, the peak where the
        instrument sees every allocation, a compiled program's planned temporaries where
        the instrument reads them."""
        found = self.counts()
        counted = found
        if self.program is not None:
            args = (self.params, self.x, self.cotangent)
            counted = self.stack.instrument.program(self.program, args, self.variant)
        if not getattr(self.stack.instrument, "SEES_FROM", 0):
            found = found.merged(self.peak())
        matmuls = counted.all_matmuls()
        temp = known(found.program_temp_bytes)
        return Static(
            found.saved, temp_bytes=temp, peak_bytes=known(found.peak_bytes), matmuls=matmuls
        )


class ScheduleCase(PlacedCase):
    """`bench --schedules`' case (`implementations.bench_case.ScheduleCase`): counts on the
    parameters' gradient, the peak on x's (no parameter gradient to leave out), or on the
    gradient its block's `PEAK_WRT` names."""

    def __init__(self, stack: StackBench, placement: Placement, data: Data, label: str):
        super().__init__(stack, placement, data)
        self.schedule = label

    def measure(self) -> ScheduleStatic:
        """The counts, and the peak's part that grows with the batch, as the model counts
        activations: split from the same call at 2B (`split_peak`) where the instrument sees
        the whole peak and splits it; read at kB and 2kB rows where it sees large allocations
        only (`batch_peak`); a compiled program's planned growth where the instrument gives
        that. An instrument whose peak cannot be split (`PEAK_NOT_SPLIT`: why) reads it not
        observable, the whole peak in the reason: another quantity than the model's."""
        wrt = getattr(self.stack.block, "PEAK_WRT", "x")
        counts = self.counts()
        fixed = None
        if getattr(self.stack.instrument, "SEES_FROM", 0):
            held, figure = batch_peak(self), "peak_batch_bytes"
        else:
            held = self.peak(wrt)
            figure = "peak_bytes"
            unsplit = getattr(self.stack.instrument, "PEAK_NOT_SPLIT", "")
            if observed(held.peak_batch_bytes):  # the instrument split it (a compiled plan)
                figure = "peak_batch_bytes"
            elif observed(held.peak_bytes) and unsplit:
                # The model counts what grows with the batch; a whole peak that cannot be
                # split is another quantity: shown in the reason, never judged against it.
                held = dataclasses.replace(
                    held,
                    peak_batch_bytes=NotObservable(
                        f"{unsplit} (the whole peak, outputs, gradients and parameters with "
                        f"it, read {held.peak_bytes} bytes)"
                    ),
                )
                figure = "peak_batch_bytes"
            elif observed(held.peak_bytes):
                doubled = PlacedCase(self.stack, self.placement, _tiled(self.data, 2))
                held = split_by_batch(held, doubled.peak(wrt))
                figure = "peak_batch_bytes"
            fixed = known(held.peak_fixed_bytes) if figure == "peak_batch_bytes" else None
        matmuls = None
        if observed(counts.evaluations) or observed(counts.phase_block_matmuls):
            matmuls = (counts.block_matmuls("forward"), counts.block_matmuls("backward"))
        peak = getattr(held, figure)
        method = str(peak)  # not observable: its reason
        if observed(peak):
            method = f"{held.methods[figure]}, the gradient with respect to {wrt}"
        return ScheduleStatic(matmuls, known(peak), method, known(counts.regions), fixed)

    def values(self) -> Values:
        y, grads = self.call()
        grads = [np.asarray(g) for g in grads]
        return Values(np.asarray(y), [tuple(grads[i : i + 4]) for i in range(0, len(grads), 4)])


def split_peak(case: PlacedCase, doubled: PlacedCase, wrt: str = "params") -> Record:
    """`case`'s record with its peak split by batch, from `doubled`, the same placement on
    twice the batch (`record.split_by_batch`)."""
    unsplit = getattr(case.stack.instrument, "PEAK_NOT_SPLIT", "")
    if unsplit:  # an instrument whose peak is not linear in the batch says why, and keeps it
        reason = NotObservable(unsplit)
        return dataclasses.replace(
            case.record(wrt), peak_batch_bytes=reason, peak_fixed_bytes=reason
        )
    return split_by_batch(case.record(wrt), doubled.peak(wrt))


def batch_peak(case: PlacedCase, wrt: str = "x") -> Record:
    """The part of `case`'s peak that grows with the batch, at its batch B, for an instrument
    whose `peak()` sees allocations of `SEES_FROM` bytes and more only: read at kB and 2kB
    rows (x and the cotangent tiled), k the least power of two putting a (kB, F) float32 array
    at `SEES_FROM` or more, as `(peak(2kB) - peak(kB)) / k` (the parameters' bytes and their
    gradients' do not grow, and cancel)."""
    sees = case.stack.instrument.SEES_FROM
    rows, width = np.shape(case.data.x)
    scale = 1
    while scale * rows * width * 4 < sees:
        scale *= 2
    low, high = (
        PlacedCase(case.stack, case.placement, _tiled(case.data, scale * k)).peak(wrt)
        for k in (1, 2)
    )
    method = (
        f"{low.methods['peak_bytes']}, at kB and 2kB rows (k = {scale}): grows with B = "
        f"(peak(2kB) - peak(kB)) / k, as allocations under {sees / 1024:g} KiB go unseen"
    )
    unseen = NotObservable(f"allocations under {sees / 1024:g} KiB go unseen: its growth is read")
    growth = max(0, round((_seen_figure(high) - _seen_figure(low)) / scale))
    return Record(
        low.instrument,
        {"peak_batch_bytes": method},
        peak_bytes=unseen,
        peak_batch_bytes=growth,
        peak_fixed_bytes=unseen,
    )


def _seen_figure(record: Record) -> int:
    if not observed(record.peak_bytes):
        raise ValueError(f"peak_bytes: {record.peak_bytes}")
    return record.peak_bytes


def _tiled(data: Data, copies: int) -> Data:
    """`data` with `copies` times the rows of x and the cotangent (the same parameters)."""
    return Data(data.blocks, np.tile(data.x, (copies, 1)), np.tile(data.cotangent, (copies, 1)))
