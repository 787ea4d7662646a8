"""bench --schedules on JAX at small L (its block and instrument through the generic driver):
each declared schedule's values equal the canonical's (the schedule's own Flax construction,
`flax_placement`), its forward matmuls are the analytic ones written here, and a program the
compiler changed is either the block's count model (`removed_reruns`: the row not observable,
with the count) or flagged (the mutant `block_mutants.UNROLLED`)."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import io
from pathlib import Path

import jax
import numpy as np
import pytest

from conformance.benchmark import schedule_values
from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import Settings, make_data
from implementations.measuring.driver import bench_module
from implementations.measuring.placement import Placement
from implementations.schedules import Schedule
from implementations.stacks.jax import block_mutants
from tests.support import schedules_kit as kit

jax_bench = bench_module("implementations.stacks.jax.block")

SETTINGS = Settings(depths=(2, 8), batch=4, features=8, repeats=1, max_repeats=1)

#: (schedule, L) -> (forward, backward) forward-direction matmuls, by hand: the forward pass
#: runs 2 per block; a region of one block reruns its x @ W1 alone (its a @ W2 feeds no
#: gradient), a region over a scan of k blocks both matmuls of each (one loop body for all k).
ANALYTIC = {
    ("none", 2): (4, 0),
    ("every", 2): (4, 2),  # 2 regions of one block, one scan: x @ W1 each
    ("none", 8): (16, 0),
    ("every", 8): (16, 8),
    ("segments(3)", 8): (16, 2 * 4),  # 2 regions, each a scan of 2 blocks; the tail plain
    ("nested(4,2)", 8): (16, 4 * 4),  # 4 regions, each a scan of 2 plain blocks
    # 2 outer regions, each rerunning its scan of 2 inner regions (8), then 4 inner ones (4)
    ("nested(2,2,2)", 8): (16, 2 * 8 + 4 * 4),
}


@functools.cache  # a schedule at a depth is measured once (each compile costs a CPU-second)
def _measured(schedule: Schedule, L: int) -> bench.ScheduleResult:
    case = jax_bench.schedule_case(schedule, make_data(SETTINGS, L))
    result = bench.result_of("jax", jax_bench, schedule, case.measure(), L, SETTINGS)
    bench.check_values(result, jax_bench, jax_bench, schedule, kit.REFERENCES)
    result.flags, result.unexplained_flags = bench.judge(result)
    return result


CASES = [
    (schedule, L)
    for L in SETTINGS.depths
    for schedule in bench.schedules_at(L)
    if bench.expresses(jax_bench, schedule) and schedule.name != "binomial"
]


def test_the_cases_are_the_analytic_table():
    assert sorted((s.label, L) for s, L in CASES) == sorted(ANALYTIC)


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=[f"{s.label}-L{L}" for s, L in CASES])
def test_a_declared_schedule_equals_the_canonical_and_runs_its_analytic_matmuls(schedule, L):
    result = _measured(schedule, L)
    assert result.values_within is True, f"{schedule.label}: {result.values_worst} x the bound"
    assert tuple(result.forward_matmuls) == ANALYTIC[(schedule.label, L)]
    assert result.regions == result.model_regions
    assert result.unexplained_flags == [], result.flags


def _top_level(label: str, L: int) -> list[str]:
    """The primitives of the placed run's jaxpr at its top level (a scan's body not opened)."""
    data = make_data(SETTINGS, L)
    run = jax_bench.block.place(Placement.of(label, L))
    stacked = tuple(np.stack([b[i] for b in data.blocks]) for i in range(4))
    return [e.primitive.name for e in jax.make_jaxpr(run)(stacked, data.x).jaxpr.eqns]


@pytest.mark.parametrize("label", ["none", "every", "segments(3)", "nested(2,2,2)"])
def test_every_region_of_the_scanned_schedules_runs_in_a_loop(label):
    top = _top_level(label, 8)
    assert "scan" in top
    assert not {"remat2", "checkpoint"} & set(top)  # no region outside a loop
    assert "lax.scan" in jax_bench.SCHEDULES[label.split("(")[0]]


def test_binomial_is_unrolled_and_its_row_says_so():
    top = _top_level("binomial(2)", 8)
    assert top.count("checkpoint") + top.count("remat2") == 2  # [[0] [[1] 2] 3] [[[4] 5] 6]
    assert "unrolled (most of binomial's" in jax_bench.SCHEDULES["binomial"]


def test_the_canonical_is_each_schedule_s_own_flax_construction():
    # the Flax program of each schedule: its scans' lengths and its remat regions, as
    # nn.remat_scan (or nn.checkpoint, for binomial) builds them, never one plain scan
    from implementations.stacks.jax import flax_placement

    def structure(label, L):
        module, layout = flax_placement.module(Schedule.parse(label), L, 4)
        data = make_data(Settings(depths=(L,), batch=1, features=4), L)
        jaxpr = jax.make_jaxpr(module.apply)({"params": layout.variables(data.blocks)}, data.x)
        text = str(jaxpr)
        return text.count("length="), text.count("checkpoint[") + text.count("remat2[")

    assert structure("none", 8) == (1, 0)
    assert structure("every", 8) == (2, 1)  # a scan of 8 regions, each a scan of 1 block
    assert structure("nested(2,2,2)", 8) == (3, 2)
    assert structure("segments(3)", 8) == (3, 1)  # the regions' two levels, the tail's scan
    assert structure("binomial(2)", 8) == (0, 7)  # Revolve's 7 regions, unrolled


@pytest.mark.parametrize("label", ["every", "segments(3)", "nested(4,2)", "binomial(2)"])
def test_each_flax_construction_puts_every_block_s_parameters_where_its_gradients_come_back(
    label,
):
    # each construction's layout (scan stacks, or a tree of named regions) against the plain
    # scan's: a block's parameters or gradients read from another block's place would differ
    data = schedule_values.values_data(8)
    plain = jax_bench.canonical_values("none", data)
    verdict = schedule_values.compare(
        jax_bench.canonical_values(label, data), plain, schedule_values.bounds(data)
    )
    assert verdict.within is True, verdict.worst


def test_a_stack_whose_values_are_off_is_caught_against_the_flax_canonical():
    # the check can fail: the same schedule with one block's bias shifted, held to the canonical
    data = schedule_values.values_data(8)
    reference = jax_bench.canonical_values("nested(2,2,2)", data)
    blocks = [tuple(np.asarray(a) for a in b) for b in data.blocks]
    blocks[3] = (*blocks[3][:3], blocks[3][3] + np.float32(1e-3))
    shifted = dataclasses.replace(data, blocks=blocks)
    values = jax_bench.schedule_case("nested(2,2,2)", shifted).values()
    verdict = schedule_values.compare(values, reference, schedule_values.bounds(data))
    assert verdict.within is False


def _docs_repro() -> str:
    text = (Path(__file__).parents[2] / "docs" / "SCHEDULES.md").read_text()
    section = text.split("### JAX on XLA:CPU")[1]
    return section.split("```python\n")[1].split("```")[0]


def test_the_docs_repro_shows_xla_cpu_merging_an_unrolled_rerun():
    # runs docs/SCHEDULES.md's repro as written: the dots compiled as XLA:CPU does by default,
    # and with the checkpoint's barriers kept
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_docs_repro(), "docs/SCHEDULES.md", "exec"), {})
    merged, kept = ast.literal_eval(printed.getvalue().strip())
    assert kept == 6, f"the repro's program changed: {kept} dots with the barriers kept"
    assert merged == 5, (
        f"XLA:CPU now compiles the repro to {merged} dots: it no longer merges the unrolled "
        "rerun. Update docs/SCHEDULES.md's JAX section and block.removed_reruns (REMOVED)"
    )


def test_the_count_model_at_l_64_is_the_docs():
    counts = [jax_bench.block.removed_reruns(Placement.of(f"binomial({c})", 64)) for c in (2, 4, 8)]
    assert counts == [10, 12, 4]


def test_budget_is_refused_naming_why():
    with pytest.raises(ValueError, match="not expressible in jax"):
        jax_bench.schedule_case("budget(0.5)", make_data(SETTINGS, 2))


@pytest.mark.parametrize(
    ("label", "L", "removed", "traced"),
    [("every", 1, 1, 1), ("segments(2)", 2, 1, 1), ("binomial(2)", 8, 3, 21)],
)
def test_reruns_xla_cpu_removes_are_the_count_model_and_read_not_observable(
    label, L, removed, traced
):
    # A region of one block with no loop of its own reruns x @ W1, which XLA:CPU merges into
    # the pass around it (cse_barrier_expander before HloCSE): the count model says how many.
    assert jax_bench.block.removed_reruns(Placement.of(label, L)) == removed
    result = _measured(Schedule.parse(label), L)
    assert result.forward_matmuls is None
    assert result.peak_bytes is None
    said = f"{removed} of the {traced} forward matmuls the traced pullback reruns"
    assert said in result.peak_method
    assert "cse_barrier_expander" in result.peak_method
    assert result.values_within is True
    assert result.regions == result.model_regions


@pytest.mark.parametrize("label", ["every", "binomial(2)"])
def test_the_unrolled_mutant_s_rows_are_flagged_not_read_as_measured(label):
    # block_mutants.UNROLLED: every region unrolled; XLA:CPU merges every rerun, a removal the
    # count model does not predict: the figures stay measured, and the bench flags them
    schedule, mutant = Schedule.parse(label), block_mutants.UNROLLED
    static = mutant.schedule_case(schedule, make_data(SETTINGS, 8)).measure()
    result = bench.result_of("jax", mutant, schedule, static, 8, SETTINGS)
    result.flags, result.unexplained_flags = bench.judge(result)
    assert result.forward_matmuls == [16, 0]  # the forward pass alone: no rerun left
    caught = [f for f in result.unexplained_flags if f.startswith("forward matmuls 16 outside")]
    assert caught, result.flags


def test_the_block_s_own_program_is_not_flagged_where_the_mutant_is():
    assert _measured(Schedule("every"), 8).unexplained_flags == []


@pytest.mark.parametrize("schedule", ["none", "every"])
def test_the_peak_is_the_part_of_xla_temporaries_that_grows_with_the_batch(schedule):
    # At B = F the parameters' gradients are as large as a block's activations, and XLA writes
    # them to its outputs or its temporaries as it sees fit: subtracting them read 0 here.
    settings = Settings(depths=(8,), batch=64, features=64, repeats=1, max_repeats=1)
    parsed = Schedule.parse(schedule)
    case = jax_bench.schedule_case(parsed, make_data(settings, 8))
    result = bench.result_of("jax", jax_bench, parsed, case.measure(), 8, settings)
    assert "temp(2B) - temp(B)" in result.peak_method
    assert [f for f in bench.judge(result) if "peak" in f] == [], result


@pytest.mark.parametrize("label", ["segments(3)", "nested(2,2,2)"])
def test_at_the_sweep_s_size_a_departure_stays_within_its_declared_count(label):
    kit.assert_within_the_model_or_its_count("jax", jax_bench, label, 8)


#: segments(s)' growing peak at B = 256, F = 64 in units, by hand (block.SEGMENTS): with one
#: region (s = 2) of n = L/2 blocks, its tape and the tail's (x and relu's output: 4 f32
#: stacks of n), the f32 zero stack they are copied from and the mask's (a quarter unit a
#: block), and the copies of x and the cotangent; with s - 1 regions in a loop, the model's
#: at a = 1.25: the s - 1 regions' inputs beside the tail's n = L/s blocks, 2.25 units each.
def _by_hand(L: int, s: int) -> float:
    n = L // s
    return 5 * n + 0.25 * n + 2 if s == 2 else (s - 1) + 2.25 * n


SEGMENTS_CASES = [(L, s) for L in (4, 8, 16, 32, 64) for s in (2, 4, 8) if L % s == 0]
SEGMENTS_FAST = [(8, 2), (8, 4)]


def _segments_peak(L: int, s: int) -> float:
    label = f"segments({s})"
    case = jax_bench.schedule_case(Schedule.parse(label), make_data(kit.SWEEP, L))
    return case.measure().peak_bytes / (kit.SWEEP.batch * kit.SWEEP.features * 4)


def _assert_segments_count(L: int, s: int) -> None:
    predicted = jax_bench.SCHEDULE_DEPARTURES["segments"].predict(
        Schedule.parse(f"segments({s})").placement(L)
    )["peak_units"]
    assert predicted == _by_hand(L, s)
    low, high = bench.peak_acceptance(predicted)
    measured = _segments_peak(L, s)
    assert low <= measured <= high, (L, s, measured, predicted)
    if s == 2 and L >= 8:  # the buffers counted are those live at the fourth copy: exact
        assert measured == pytest.approx(predicted, abs=0.01), (L, measured)


@pytest.mark.parametrize(("L", "s"), SEGMENTS_FAST)
def test_segments_peak_is_its_count_model(L, s):
    _assert_segments_count(L, s)


@pytest.mark.slow(reason="17 s alone: 12 schedules at B = 256, each compiled at B and at 2B")
@pytest.mark.parametrize(("L", "s"), [c for c in SEGMENTS_CASES if c not in SEGMENTS_FAST])
def test_segments_peak_is_its_count_model_from_l_4_to_64(L, s):
    _assert_segments_count(L, s)


def test_the_segments_departure_is_a_count_model_with_its_upstream_source():
    departure = jax_bench.SCHEDULE_DEPARTURES["segments"]
    assert not departure.words
    assert "copy_insertion.cc" in departure.reference
    assert "loops.py:640" in departure.reference
