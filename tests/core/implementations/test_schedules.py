"""The schedule vocabulary (`implementations.schedules`), Revolve (`implementations.revolve`)
and docs/SCHEDULES.md.

Each analytic model, and each departure's count, is held to counts worked out by hand and
written in this file (`BY_HAND`, `DEPARTED_BY_HAND`), each with its working: a simulator built
on the model's own conventions would share any mistake in them. `_Simulation` (a training step
over a placement tree, tensors held and released by name) is held to ADOL-C's published
Revolve counts, which it did not make.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections import Counter
from math import comb

import pytest

from implementations.revolve import optimal_forward_steps, optimal_split, revolve_forward_steps
from implementations.schedules import (
    SCHEDULE_NAMES,
    Activations,
    Departure,
    Region,
    Schedule,
    regions,
    revolve_frontier,
    show,
    sqrt_segments,
)
from tests.support.helpers import ROOT

#: Published: ADOL-C's numforw (Griewank & Walther 2000), L steps with c snapshots.
PUBLISHED = {(4, 1): 6, (8, 2): 14, (16, 4): 27, (100, 10): 222}


class _Simulation:
    """One training step over a placement: the forward pass, then the backward in reverse.

    Held tensors are reference-counted by name: ("x", i) block i's input, ("a", i) its
    internals. A plain block holds both when it runs; a region holds the input of its first
    block, and when the backward reaches it, reruns its items, then backs through them.
    """

    def __init__(self, placement, tape_to_the_end=False, held_per_level=0):
        self.tape_to_the_end, self.held_per_level = tape_to_the_end, held_per_level
        self.depth = 0  # regions open in the backward pass
        self.held = Counter()
        self.alive = Counter()  # distinct tensors held, by kind ("x" or "a")
        self.forwards = 0
        self.peak = (0, 0)
        self.lengths = {}  # id(region) -> its blocks, counted once
        self._forward(placement)
        self._backward(placement)
        assert not +self.held, f"still held after the step: {+self.held}"

    def _hold(self, *names):
        for name in names:
            self.held[name] += 1
            self.alive[name[0]] += self.held[name] == 1
        # what a departure holds beside the model ("g": per open level) counts as internals
        now = (self.alive["x"], self.alive["a"] + self.alive["g"])
        self.peak = max(self.peak, now, key=sum)

    def _release(self, *names):
        for name in names:
            self.held[name] -= 1
            self.alive[name[0]] -= self.held[name] == 0

    def _forward(self, items):
        for item in items:
            if isinstance(item, int):
                self.forwards += 1
                self._hold(("x", item), ("a", item))
            else:
                self._hold(("x", _first(item)))
                self.forwards += self._length(item)  # run through, nothing taped

    def _length(self, region):
        if id(region) not in self.lengths:
            self.lengths[id(region)] = len(_flat(region.items))
        return self.lengths[id(region)]

    def _backward(self, items):
        kept = []  # with the tape kept to the end: released only once this level is done
        for item in reversed(items):
            if isinstance(item, int):
                kept.append((("x", item), ("a", item)))
            else:
                self.depth += 1
                levels = [("g", self.depth, n) for n in range(self.held_per_level)]
                self._hold(*levels)
                self._forward(item.items)
                self._backward(item.items)
                self._release(*levels)
                self.depth -= 1
                kept.append((("x", _first(item)),))
            if not self.tape_to_the_end:
                self._release(*kept.pop())
        for names in kept:
            self._release(*names)


def _flat(items):
    return [i for item in items for i in ([item] if isinstance(item, int) else _flat(item.items))]


def _first(region):
    while not isinstance(region, int):
        region = region.items[0]
    return region


def _simulated(schedule, L):
    run = _Simulation(schedule.placement(L))
    return Activations(*run.peak), run.forwards


# -- Revolve ------------------------------------------------------------------------------


@pytest.mark.parametrize(("steps", "forwards"), PUBLISHED.items())
def test_revolve_meets_the_published_values(steps, forwards):
    L, c = steps
    assert revolve_forward_steps(L, c) == forwards
    assert optimal_forward_steps(L, c) == forwards
    # ...and the schedule it places really runs them, each block once more taped
    assert _simulated(Schedule("binomial", (c,)), L)[1] == forwards + L


def test_the_closed_form_is_the_formula():
    # r*L - C(c+r, c+1), r the least with C(c+r, c) >= L, straight from binomials
    for L in range(1, 201):
        for c in range(1, 13):
            r = next(r for r in range(L + 1) if comb(c + r, c) >= L)
            assert revolve_forward_steps(L, c) == r * L - comb(c + r, c + 1), (L, c)


def test_the_recursion_meets_the_closed_form():
    for L in range(1, 201):
        for c in range(1, 13):
            assert optimal_forward_steps(L, c) == revolve_forward_steps(L, c), (L, c)


def test_the_split_attains_the_recursion_s_minimum():
    for L in range(2, 101):
        for c in range(1, 9):
            k = optimal_split(L, c)
            assert 0 < k < L, (L, c, k)
            assert L - k == 1 or c > 1, (L, c, k)  # t(l >= 2, 0) is inf
            rest = 0 if L - k == 1 else optimal_forward_steps(L - k, c - 1)
            assert k + rest + optimal_forward_steps(k, c) == optimal_forward_steps(L, c)


@pytest.mark.parametrize("L", [1, 2, 3, 8, 64])
def test_the_frontier_trades_memory_for_forwards(L):
    points = revolve_frontier(L)
    assert [p.snapshots for p in points] == list(range(1, max(1, L - 1) + 1))
    for p in points:
        assert (p.peak, p.forwards) == _simulated(Schedule("binomial", (p.snapshots,)), L)
    for before, after in itertools.pairwise(points):
        assert after.peak.units > before.peak.units
        assert after.forwards <= before.forwards
    # all snapshots: every block its own region but the last, which is taped straight away
    assert points[-1].forwards == 2 * L - 1
    assert points[-1].peak == Activations(L, 1)


# -- every model against the counts by hand -----------------------------------------------------


#: (schedule, L) -> (inputs, internals, forwards), worked by hand from docs/SCHEDULES.md's
#: conventions (a region keeps its input; when the backward reaches it, it reruns its items).
BY_HAND = {
    # every block taped in the forward pass: 8 inputs, 8 internals, 8 forwards
    ("none", 8): (8, 8, 8),
    # 8 region inputs; the last region's rerun tapes its block: a7; each block run twice
    ("every", 8): (8, 1, 16),
    # [0 1] [2 3] 4 5 6 7: 2 region inputs + the plain tail's 4 inputs and 4 internals;
    # forwards 8 + 4 (each region's 2 blocks rerun once)
    ("segments(3)", 8): (6, 4, 12),
    # 7 regions of 8 and a plain tail of 8: 7 + 8 inputs, 8 internals; 64 + 56 forwards
    ("segments(8)", 64): (15, 8, 120),
    # [[0 1] [2 3]] [[4 5] [6 7]]: x0, x4; in the last outer rerun x6 beside x4 (shared); in
    # [6 7]'s rerun x7 beside x6, and a6, a7: 4 inputs, 2 internals; 3 runs of each block
    ("nested(2,2,2)", 8): (4, 2, 24),
    # 4 outer inputs, the last one's rerun: x7 beside x6, a6, a7; 2 runs of each block
    ("nested(4,2)", 8): (5, 2, 16),
    # 8 outer inputs; the last one's 8 blocks taped: 7 more inputs, 8 internals
    ("nested(8,8)", 64): (15, 8, 128),
    # [[[0] 1] 2] 3: x0 and the taped block beside it (x2, a2 in the first rerun); forwards
    # 4, then reruns of 3, 2 and 1 blocks: 10 (ADOL-C's numforw(4, 1) = 6, plus 4)
    ("binomial(1)", 4): (2, 1, 10),
    # 2 snapshots and the block in hand, 1 taped; numforw(8, 2) = 14 (published), plus 8
    ("binomial(2)", 8): (3, 1, 22),
}


@pytest.mark.parametrize(("label", "L"), BY_HAND, ids=[f"{s}-L{L}" for s, L in BY_HAND])
def test_every_model_is_the_count_worked_by_hand(label, L):
    inputs, internals, forwards = BY_HAND[label, L]
    schedule = Schedule.parse(label)
    assert schedule.peak_activations(L) == Activations(inputs, internals)
    assert schedule.forward_evaluations(L) == forwards


@pytest.mark.parametrize(
    ("label", "L"), [("none", 5), ("every", 5), ("segments(3)", 10), ("nested(2,3)", 6)]
)
def test_placements_cover_the_blocks_in_order(label, L):
    assert _flat(Schedule.parse(label).placement(L)) == list(range(L))


def test_placements_are_what_each_schedule_says():
    assert show(Schedule.parse("none").placement(3)) == "0 1 2"
    assert show(Schedule.parse("every").placement(3)) == "[0] [1] [2]"
    # torch's checkpoint_sequential: L//s blocks a segment, the last segment the rest, plain
    assert show(Schedule.parse("segments(3)").placement(8)) == "[0 1] [2 3] 4 5 6 7"
    chen = Schedule.parse("segments(8)").placement(64)  # the docs' example
    assert chen[:7] == tuple(Region(tuple(range(i, i + 8))) for i in range(0, 56, 8))
    assert chen[7:] == tuple(range(56, 64))
    assert show(Schedule.parse("nested(2,2,2)").placement(8)) == "[[0 1] [2 3]] [[4 5] [6 7]]"
    # Revolve with one snapshot: reruns from the start for every block
    assert show(Schedule.parse("binomial(1)").placement(4)) == "[[[0] 1] 2] 3"
    assert [depth for depth, _ in regions(Schedule.parse("binomial(1)").placement(4))] == [1, 2, 3]


def test_a_placement_tells_a_claimed_schedule_from_another():
    # a stack that claims segments(4) but places a region on every block is caught
    claimed, placed = Schedule.parse("segments(4)"), Schedule.parse("every").placement(8)
    assert claimed.placement(8) != placed
    assert _Simulation(placed).forwards != claimed.forward_evaluations(8)


@pytest.mark.parametrize("L", [1, 2, 7, 64])
def test_segments_at_its_ends(L):
    one, all_ = Schedule("segments", (1,)), Schedule("segments", (L,))
    assert one.placement(L) == Schedule("none").placement(L)
    assert one.model(L) == Schedule("none").model(L)
    # s = L: every block a region but the last: Revolve with all the snapshots it can use
    assert all_.placement(L) == Schedule("binomial", (max(1, L - 1),)).placement(L)
    assert (all_.peak_activations(L), all_.forward_evaluations(L)) == (Activations(L, 1), 2 * L - 1)


def test_nested_is_remat_scan():
    # remat_scan(lengths=(L,)) is a plain scan; (L, 1) a region per block; (s, L/s) s segments
    assert Schedule.parse("nested(6)").placement(6) == Schedule.parse("none").placement(6)
    assert Schedule.parse("nested(6,1)").placement(6) == Schedule.parse("every").placement(6)
    assert Schedule.parse("nested(3,2)").forward_evaluations(6) == 2 * 6
    # a level of one above the innermost: a region around a region, L forwards for nothing
    for once, twice in (("none", "nested(1,64)"), ("nested(8,8)", "nested(8,1,8)")):
        once, twice = Schedule.parse(once), Schedule.parse(twice)
        assert twice.peak_activations(64) == once.peak_activations(64)
        assert twice.forward_evaluations(64) == once.forward_evaluations(64) + 64
    assert sqrt_segments(64) == Schedule.parse("segments(8)")
    assert sqrt_segments(1) == Schedule.parse("segments(1)")


def test_chen_s_sqrt_schedule_keeps_under_five_sqrt_l_units():
    for L in range(1, 2001):
        peak, root = sqrt_segments(L).peak_activations(L), L**0.5
        assert peak.internals < 2 * root, L  # torch's tail: the remainder, under 2 sqrt(L)
        assert peak.units < 5 * root, L
        assert sqrt_segments(L).forward_evaluations(L) < 2 * L, L


def test_nested_refuses_a_product_other_than_l():
    with pytest.raises(ValueError, match=r"lengths .*multiply to 12, not L=16"):
        Schedule.parse("nested(3,4)").placement(16)
    for method in ("peak_activations", "forward_evaluations"):
        with pytest.raises(ValueError, match=r"\blengths\b"):
            getattr(Schedule.parse("nested(3,4)"), method)(16)


def test_segments_refuses_more_segments_than_blocks():
    with pytest.raises(ValueError, match=r"segments\(5\) needs s <= L, got L=4"):
        Schedule.parse("segments(5)").peak_activations(4)


def test_budget_has_bounds_only():
    budget = Schedule.parse("budget(0.5)")
    assert not budget.analytic
    assert all(Schedule.parse(x).analytic for x in ("none", "every"))
    for method in ("placement", "peak_activations", "forward_evaluations"):
        with pytest.raises(ValueError, match=r"budget\(0\.5\) has no analytic model"):
            getattr(budget, method)(8)
    assert budget.bounds(8) == (Schedule.parse("every").model(8), Schedule.parse("none").model(8))
    assert Schedule.parse("every").bounds(8) == (Schedule.parse("every").model(8),) * 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8"])
def test_a_bad_depth_names_l(bad):
    with pytest.raises((TypeError, ValueError), match=r"\bL\b"):
        Schedule.parse("every").placement(bad)
    with pytest.raises((TypeError, ValueError), match=r"\bL\b"):
        revolve_forward_steps(bad, 2)


def test_the_vocabulary_imports_numpy_at_most():
    allowed = {"__future__", "collections", "dataclasses", "typing"}
    allowed |= {"functools", "itertools", "math", "numbers", "re"}
    for name in ("schedules", "revolve"):
        tree = ast.parse((ROOT / "implementations" / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                found = {node.module.split(".")[0]}
            else:
                continue
            assert found <= allowed | {"numpy"}, (name, found)


# -- bytes ----------------------------------------------------------------------------------


def test_units_are_the_bench_s_saved_bytes():
    # the plain block keeps its input and a (2 units), a checkpointed block its input: as
    # torch and TensorFlow measured them (docs/bench.json; JAX keeps relu's mask beside)
    rows = json.loads((ROOT / "docs" / "bench.json").read_text())["results"]
    kept = {"none": Schedule.parse("none"), "full": Schedule.parse("every")}
    seen = 0
    for row in rows:
        if row["framework"] in ("torch", "tensorflow") and row["mode"] in kept:
            L, B, F = row["depth"], row["batch"], row["features"]
            peak = kept[row["mode"]].peak_activations(L)
            after_forward = peak if row["mode"] == "none" else Activations(L, 0)
            assert row["saved_bytes"] == after_forward.bytes(B, F), row
            seen += 1
        if row["framework"] == "jax" and row["mode"] == "none":  # and relu's bool mask
            L, B, F = row["depth"], row["batch"], row["features"]
            mask = L * B * F
            assert row["saved_bytes"] == kept["none"].peak_activations(L).bytes(B, F) + mask
            seen += 1
    assert seen >= 24


def test_a_rerun_block_runs_one_matmul_where_the_framework_stops_early():
    # convention 2: a rerun's last block counts one evaluation; torch's early stop and XLA's
    # dead-code elimination run its first matmul only (docs/bench.json: `full` over `none`)
    rows = json.loads((ROOT / "docs" / "bench.json").read_text())["results"]
    matmuls = {(r["framework"], r["variant"], r["mode"], r["depth"]): r["matmuls"] for r in rows}
    stacks = [("torch", ""), ("torch", "compiled"), ("tensorflow", "xla"), ("jax", "scan")]
    for framework, variant in stacks:
        depths = sorted(L for (f, v, m, L) in matmuls if (f, v, m) == (framework, variant, "full"))
        assert depths, (framework, variant)
        for L in depths:
            extra = matmuls[framework, variant, "full", L] - matmuls[framework, variant, "none", L]
            assert extra == L, (framework, variant, L)


def test_bytes_name_their_argument():
    assert Activations(3, 1).bytes(2, 5) == 4 * 2 * 5 * 4
    with pytest.raises(ValueError, match=r"\bbatch\b"):
        Activations(3, 1).bytes(0, 5)
    with pytest.raises(TypeError, match=r"\bfeatures\b"):
        Activations(3, 1).bytes(2, 5.0)


# -- the vocabulary -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("none", "none"),
        (" every ", "every"),
        ("segments(4)", "segments(4)"),
        ("nested(8, 8)", "nested(8,8)"),
        ("nested(4,4,4)", "nested(4,4,4)"),
        ("binomial( 3 )", "binomial(3)"),
        ("budget(0.5)", "budget(0.5)"),
        ("budget(1)", "budget(1)"),
    ],
)
def test_parse_and_label_round_trip(text, label):
    schedule = Schedule.parse(text)
    assert schedule.label == str(schedule) == label
    assert Schedule.parse(schedule.label) == schedule
    assert Schedule.parse(schedule) is schedule
    assert schedule.name in SCHEDULE_NAMES


@pytest.mark.parametrize(
    ("text", "error", "names"),
    [
        ("sometimes", ValueError, "schedule"),
        ("segments", ValueError, "schedule"),
        ("every(2)", ValueError, "schedule"),
        ("segments(0)", ValueError, "s"),
        ("segments(2.5)", ValueError, "s"),
        ("segments(2,3)", ValueError, "s"),
        ("nested()", ValueError, "lengths"),
        ("nested(4,0)", ValueError, "lengths"),
        ("binomial(0)", ValueError, "c"),
        ("binomial(x)", ValueError, "c"),
        ("budget(1.5)", ValueError, "b"),
        ("budget(nan)", ValueError, "b"),
        ("budget(half)", ValueError, "b"),
        (4, TypeError, "schedule"),
    ],
)
def test_bad_spellings_raise_naming_the_argument(text, error, names):
    with pytest.raises(error, match=rf"\b{names}\b"):
        Schedule.parse(text)


def test_a_region_is_consecutive_blocks():
    assert Region((2, Region((3, 4)))).blocks == range(2, 5)
    assert Region((0, Region((1,)))) == Region((0, Region((1,))))
    assert Region((0, Region((1,)))) != Region((Region((0,)), 1))
    assert len({Region((0,)), Region((0,)), Region((1,))}) == 2
    with pytest.raises(ValueError, match="consecutive"):
        Region((0, 2))
    with pytest.raises(ValueError, match="items"):
        Region(())
    with pytest.raises(TypeError, match="items"):
        Region((0, "1"))


#: (schedule, L, held_per_level, tape_to_the_end) -> the departure's peak in units, by hand.
DEPARTED_BY_HAND = {
    # x0..x3 kept; region 3's rerun: a3 beside x3 (its own input), 1 held for its level
    ("every", 4, 1, False): 6,
    # with the tape kept to the end: the same (the rerun is the last thing the step does)
    ("every", 4, 1, True): 6,
    # [[0 1] [2 3]] [[4 5] [6 7]]: the model's 6 (x0, x4, x6, x7, a6, a7), 1 held for each of
    # the 2 open levels
    ("nested(2,2,2)", 8, 1, False): 8,
    ("nested(2,2,2)", 8, 2, False): 10,
    # with the tape: the outer level keeps x0, x4 (2); the second outer region's rerun keeps
    # x4, x6 (2) beside its largest inner rerun (x6, x7, a6, a7: 4, its input shared, 1
    # held): 2 + 4 = 6, its input shared and 1 held: 6; in all 2 + 6
    ("nested(2,2,2)", 8, 1, True): 8,
    # [[[0] 1] 2] 3 with the tape: the top keeps x0, x3, a3 (3); [[[0] 1] 2]'s level x0, x2,
    # a2 (3) and [[0] 1]'s rerun; that level x0, x1, a1 (3) and [0]'s rerun (x0, a0: 2, +1
    # held -1 shared = 2): 5, +1 -1 = 5; 3 + 5 = 8, +1 -1 = 8; 3 + 8 = 11
    ("binomial(1)", 4, 1, True): 11,
    # without it: the deepest rerun ([0]: x0, a0) with x0 kept, 3 open levels held: 2 + 3
    ("binomial(1)", 4, 1, False): 5,
}


@pytest.mark.parametrize(
    ("label", "L", "held", "tape"), DEPARTED_BY_HAND, ids=[str(k) for k in DEPARTED_BY_HAND]
)
def test_a_departure_s_count_is_the_count_worked_by_hand(label, L, held, tape):
    departure = Departure("upstream", held_per_level=held, tape_to_the_end=tape)
    placement = Schedule.parse(label).placement(L)
    assert departure.peak_units(placement) == DEPARTED_BY_HAND[label, L, held, tape]


def test_a_departure_s_count_needs_no_recursion():
    deep = Schedule.parse("binomial(1)").placement(2000)
    # each of 1999 levels keeps its plain block (2) and its cotangent (1); the innermost, 2
    assert Departure("why", 1, tape_to_the_end=True).peak_units(deep) == 3 * 1999 + 2


@pytest.mark.parametrize(
    ("arguments", "error", "names"),
    [
        (("",), ValueError, "reason"),
        (("why", 0), ValueError, "held_per_level"),
        (("why", True), ValueError, "held_per_level"),
        (("why", None, "yes"), TypeError, "tape_to_the_end"),
    ],
)
def test_a_bad_departure_names_its_argument(arguments, error, names):
    with pytest.raises(error, match=names):
        Departure(*arguments)


def test_a_departure_says_its_count():
    assert str(Departure("why")) == "why"
    assert Departure.of("why") == Departure("why")
    both = str(Departure("why", held_per_level=2, tape_to_the_end=True))
    assert both == "why (accepted: each trace's tape kept until its backward returns; " + (
        "2 units more per level of nesting)"
    )


def test_revolve_s_deepest_nesting_needs_no_recursion():
    # binomial(1) nests L-1 regions; placing, showing and comparing it must not recurse
    deep = Schedule.parse("binomial(1)").placement(2000)
    assert max(depth for depth, _ in regions(deep)) == 1999
    assert deep == Schedule.parse("binomial(1)").placement(2000)
    assert show(deep).startswith("[" * 1999 + "0] 1] 2]")


# -- the docs -------------------------------------------------------------------------------

_ROW = re.compile(r"^\| `(?P<label>[^`]+)` \|(?P<cells>.*)\|$")


def _doc_table():
    """docs/SCHEDULES.md's table at L = 64: label -> its cells."""
    text = (ROOT / "docs" / "SCHEDULES.md").read_text()
    section = text.split("## At L = 64", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = _ROW.match(line.strip())
        if match:
            rows[match["label"]] = [cell.strip() for cell in match["cells"].split("|")]
    return rows


def _cell(low, high):
    return str(low) if low == high else f"{low} to {high}"


def test_the_docs_table_is_the_code_s():
    rows = _doc_table()
    assert len(rows) >= 10
    assert {Schedule.parse(label).name for label in rows} == set(SCHEDULE_NAMES)
    for label, cells in rows.items():
        lean, plain = Schedule.parse(label).bounds(64)
        assert cells == [
            _cell(lean.peak.inputs, plain.peak.inputs),
            _cell(lean.peak.internals, plain.peak.internals),
            _cell(lean.peak.units, plain.peak.units),
            _cell(lean.forwards, plain.forwards),
        ], label


def test_the_docs_cite_the_published_revolve_values():
    text = (ROOT / "docs" / "SCHEDULES.md").read_text()
    for (L, c), forwards in PUBLISHED.items():
        assert f"({L}, {c}) -> {forwards}" in text


def test_the_docs_figures_below_the_frontier_are_the_code_s():
    text = " ".join((ROOT / "docs" / "SCHEDULES.md").read_text().split())
    segments, nested = (Schedule.parse(s).model(64) for s in ("segments(8)", "nested(8,8)"))
    assert segments.peak == nested.peak
    frontier = revolve_frontier(64)
    same_peak = min((p for p in frontier if p.peak.units <= segments.peak.units),
                    key=lambda p: p.forwards)  # fmt: skip
    same_forwards = min((p for p in frontier if p.forwards <= nested.forwards),
                        key=lambda p: p.peak.units)  # fmt: skip
    assert same_peak.forwards > nested.forwards  # below the curve
    assert (
        f"keep {segments.peak.units} units for {segments.forwards} and {nested.forwards} "
        f"forwards, where Revolve needs {same_peak.forwards} forwards for "
        f"{same_peak.peak.units} (`binomial({same_peak.snapshots})`) and "
        f"{same_forwards.peak.units} units for {same_forwards.forwards} "
        f"(`binomial({same_forwards.snapshots})`)"
    ) in text
