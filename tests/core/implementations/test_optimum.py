"""The true optimum (`implementations/optimum.py`) against an exhaustive enumeration, the
hand-computed points at L = 64, and Revolve; and its mutant, Revolve's model passed off as
the optimum, caught by the same checks.

The enumeration is written here, apart from the module: every nested placement of L blocks
(a region around a single region aside: it reruns the same blocks twice for the same peak),
each run by `_Step`, which executes the forward and the backward pass holding block inputs
and internals by name and counts what is alive and how many blocks are evaluated.
"""

from __future__ import annotations

import functools
import itertools
import time

import pytest

from implementations.optimum import (
    least_peak,
    optimal_evaluations,
    optimal_frontier,
    optimal_placement,
    placement_cost,
)
from implementations.schedules import Region, Schedule, revolve_frontier, show

WEIGHTS = (1.0, 1.25)  # a: torch's and TensorFlow's internals, JAX's with relu's mask
TAPED = 0  # in the enumeration's spelling, a taped block; a region is the tuple of its items


@functools.cache
def _sequences(n: int) -> tuple[tuple, ...]:
    """Every sequence of items over n blocks: a taped block (`TAPED`) or a region (a tuple
    of its items)."""
    if n == 0:
        return ((),)
    return _open(n) + tuple((inner,) for inner in _open(n))  # and one region over them all


@functools.cache
def _open(n: int) -> tuple[tuple, ...]:
    """The sequences over n blocks but a single region: a region's items (a region around
    one region reruns the same blocks twice, for the same peak)."""
    found = [(TAPED, *rest) for rest in _sequences(n - 1)]
    for k in range(1, n):
        found += [(inner, *rest) for inner in _open(k) for rest in _sequences(n - k)]
    return tuple(found)


@functools.cache
def _size(item) -> int:
    return 1 if item == TAPED else sum(_size(i) for i in item)


class _Step:
    """One training step over a placement: the forward pass, then the backward in reverse.
    Block i's input is held by count (a region holds its first block's input, and so may
    the item that begins it: alive once however many hold it), a taped block's internals
    while it is taped; a region, when the backward reaches it, reruns its items from its
    input, then backs through them. Every peak is read after each hold. (Locals and plain
    lists: the enumeration at L = 8 runs 2.2 million steps.)"""

    def __init__(self, items, weights=WEIGHTS):
        held = [0] * sum(map(_size, items))
        alive = [0, 0]  # block inputs, taped internals
        peaks = [0.0] * len(weights)
        evaluations = 0

        def forward(items, start):
            nonlocal evaluations
            for item in items:
                held[start] += 1
                alive[0] += held[start] == 1
                alive[1] += item == TAPED  # a region runs through, nothing taped
                x, taped = alive
                for n, a in enumerate(weights):
                    peaks[n] = max(peaks[n], x + a * taped)
                size = 1 if item == TAPED else _size(item)
                evaluations += size
                start += size

        def backward(items, start):
            starts = list(itertools.accumulate((_size(i) for i in items), initial=start))
            for item, first in reversed(list(zip(items, starts, strict=False))):
                if item == TAPED:
                    alive[1] -= 1
                else:
                    forward(item, first)
                    backward(item, first)
                held[first] -= 1
                alive[0] -= held[first] == 0

        forward(items, 0)
        backward(items, 0)
        assert (any(held), alive) == (False, [0, 0]), f"still held after the step: {held}, {alive}"
        self.peaks, self.evaluations = peaks, evaluations


def _spelled(items) -> tuple:
    """A placement of `implementations.schedules` (indices and `Region`s) in this spelling."""
    return tuple(_spelled(i.items) if isinstance(i, Region) else TAPED for i in items)


def _pareto(points) -> list[tuple[float, int]]:
    """The least evaluations at each peak, where they fall: the frontier, least peak first."""
    found, best = [], None
    for peak, evaluations in sorted(points):
        if best is None or evaluations < best:
            found.append((peak, evaluations))
            best = evaluations
    return found


@functools.cache
def _enumerated(L: int) -> dict[float, list[tuple[float, int]]]:
    """Per a in `WEIGHTS`: the frontier of every nested placement of L blocks, run."""
    points = {a: set() for a in WEIGHTS}
    for items in _sequences(L):
        step = _Step(items)
        for a, peak in zip(WEIGHTS, step.peaks, strict=True):
            points[a].add((peak, step.evaluations))
    return {a: _pareto(found) for a, found in points.items()}


def _frontier(optimum, L, a):
    return [(p.peak, p.evaluations) for p in optimum(L, a)]


def _meets_the_enumeration(optimum, L: int) -> None:
    for a in WEIGHTS:
        assert _frontier(optimum, L, a) == _enumerated(L)[a], (L, a)


def _shrinking_regions() -> tuple:
    """The hand-computed placement at L = 64 within 16 units: regions of 8, 7, 7, 6, 6, ...,
    1 blocks (the k-th backed through with k - 1 checkpoints before it: k - 1 + 2 * size
    <= 16), then block 63 taped."""
    sizes = [8, *[s for size in range(7, 0, -1) for s in (size, size)][:-1]]
    assert sum(sizes) == 63
    starts = itertools.accumulate(sizes, initial=0)
    return (*(Region(tuple(range(s, s + n))) for s, n in zip(starts, sizes, strict=False)), 63)


def _meets_the_hand_points(optimum) -> None:
    """At L = 64, a = 1: within 128 evaluations the least peak is 16 units, within 201, 8."""
    points = _frontier(optimum, 64, 1.0)
    assert min(peak for peak, count in points if count <= 128) == 16
    assert min(peak for peak, count in points if count <= 201) == 8


# -- the optimum --------------------------------------------------------------------------


@pytest.mark.parametrize("L", range(1, 7))
def test_the_frontier_is_the_enumeration_s(L):
    _meets_the_enumeration(optimal_frontier, L)


@pytest.mark.slow(
    reason="94 s alone: 2.4 million placements of 7 and 8 blocks, each run (88 s at L = 8)"
)
@pytest.mark.parametrize("L", [7, 8])
def test_the_frontier_is_the_enumeration_s_at_seven_and_eight_blocks(L):
    _meets_the_enumeration(optimal_frontier, L)


@pytest.mark.parametrize("L", [1, 2, 5, 6, 17, 64])
def test_each_point_s_placement_runs_at_its_peak_and_evaluations(L):
    for a in WEIGHTS:
        for point in optimal_frontier(L, a):
            step = _Step(_spelled(optimal_placement(L, point.peak, a)), (a,))
            assert (step.peaks[0], step.evaluations) == (point.peak, point.evaluations)
            assert optimal_evaluations(L, point.peak, a) == point.evaluations


def test_the_hand_computed_points_at_64_blocks():
    _meets_the_hand_points(optimal_frontier)
    assert optimal_placement(64, 16) == _shrinking_regions()
    step = _Step(_spelled(_shrinking_regions()), (1.0,))
    assert (step.peaks[0], step.evaluations) == (16, 127)


@pytest.mark.parametrize("L", [1, 2, 3, 8, 17, 64, 100])
def test_one_tape_at_a_time_it_is_revolve(L):
    revolve = [(p.peak.units, p.forwards) for p in revolve_frontier(L)]
    assert _frontier(functools.partial(optimal_frontier, one_tape=True), L, 1.0) == revolve
    for c in (1, 2, 6, 21):  # and at a = 1.25 Revolve's peaks are c + 1 + a
        if c < L - 1:
            forwards = Schedule("binomial", (c,)).forward_evaluations(L)
            assert optimal_evaluations(L, c + 2.25, 1.25, one_tape=True) == forwards


def test_several_tapes_beat_revolve_where_the_issue_says():
    # L = 64: 8 units take Revolve 220 evaluations (binomial(6)), the optimum 198
    assert optimal_evaluations(64, 8) == 198 < Schedule("binomial", (6,)).forward_evaluations(64)


def test_the_cost_of_any_placement_is_the_step_s():
    for L in range(1, 6):
        for items in _sequences(L):
            step = _Step(items)
            placed = _placed(items, 0)
            for a, peak in zip(WEIGHTS, step.peaks, strict=True):
                assert placement_cost(placed, a) == (peak, step.evaluations), show(placed)


def _placed(items, start):
    found = []
    for item in items:
        found.append(start if item == TAPED else Region(_placed(item, start)))
        start += _size(item)
    return tuple(found)


def test_sixty_four_blocks_take_well_under_a_second():
    started = time.perf_counter()
    for a in (0.75, 1.5):  # fresh tables: no other test asks for these a
        optimal_frontier(64, a)
    assert time.perf_counter() - started < 0.5


def test_the_least_peak_and_a_bad_budget_name_it():
    assert (least_peak(64), least_peak(1), least_peak(64, 1.25)) == (3, 2, 3.25)
    with pytest.raises(ValueError, match=r"peak 2\.5 units .* 3 units"):
        optimal_placement(64, 2.5)
    for bad, error in (("8", TypeError), (float("nan"), TypeError)):
        with pytest.raises(error, match="peak"):
            optimal_evaluations(8, bad)
    for bad in (0.3, -1.0):
        with pytest.raises(ValueError, match=r"a .*0\.25"):
            optimal_frontier(8, bad)
    with pytest.raises(ValueError, match="L must be"):
        optimal_frontier(0)


def test_the_least_peak_nests_sixty_three_deep_without_recursion():
    items = optimal_placement(64, 3)
    assert placement_cost(items) == (3, Schedule("binomial", (1,)).forward_evaluations(64))


# -- the mutant: Revolve's model passed off as the optimum -----------------------------------


def _revolve_as_the_optimum(L, a=1.0):
    """The mutant: the tape cost ignored, one block taped at a time (Revolve's model)."""
    return optimal_frontier(L, a, one_tape=True)


def test_revolve_passed_off_as_the_optimum_is_caught():
    with pytest.raises(AssertionError):
        _meets_the_hand_points(_revolve_as_the_optimum)
    with pytest.raises(AssertionError):
        _meets_the_enumeration(_revolve_as_the_optimum, 4)


# -- optimal(m) in the schedule vocabulary ----------------------------------------------------


@pytest.mark.parametrize(("L", "m"), [(1, 2), (5, 3), (8, 4), (8, 9), (64, 8), (64, 16)])
def test_optimal_m_is_the_optimum_s_placement_and_the_step_s_model(L, m):
    schedule = Schedule.parse(f"optimal({m})")
    assert schedule.label == f"optimal({m})"
    assert Schedule.parse(schedule.label) == schedule
    assert schedule.placement(L) == optimal_placement(L, m)
    step = _Step(_spelled(schedule.placement(L)), (1.0,))
    model = schedule.model(L)
    assert (model.peak.units, model.forwards) == (step.peaks[0], step.evaluations)
    assert model.peak.units <= m


def test_optimal_m_below_the_least_peak_names_m_and_the_least():
    with pytest.raises(ValueError, match=r"optimal\(2\): m must be at least 3 units at L=64"):
        Schedule.parse("optimal(2)").model(64)
    for bad in ("optimal(0)", "optimal(x)", "optimal(2,3)"):
        with pytest.raises(ValueError, match=r"\bm\b"):
            Schedule.parse(bad)
