"""`bench --schedules`, framework-free: a numpy stack that runs a placement as a framework
would (reruns included, every matmul counted), and schedule mutants the bench must catch."""

from __future__ import annotations

import json
from typing import ClassVar

import numpy as np
import pytest

from conformance.benchmark import against_optimum, schedule_values
from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import Settings
from conformance.benchmark.schedule_plot import family
from conformance.tables import reports
from conformance.tables.kinds import bench_schedules as kind
from conformance.tables.render import markdown
from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.measuring.departure import REGION_SCHEDULES, CountModel, every_region
from implementations.schedules import Departure, Region, Schedule, regions


class NumpyCase:
    """The stack over `items`, run as the placement says: a region keeps its input and reruns
    its items in the backward pass. Counts each matmul x @ W1 and a @ W2 it executes."""

    framework = "numpy"

    def __init__(self, label, items, data, rerun_shift=0.0):
        self.schedule, self.items, self.data = label, items, data
        self.rerun_shift = rerun_shift  # a mutant's: what a rerun adds to a block's output
        self.matmuls, self.entered = 0, 0
        self.peak_bytes = None  # no peak instrument, unless a mutant's says one

    def _block(self, i, x, rerun):
        w1, b1, w2, b2 = self.data.blocks[i]
        self.matmuls += 2
        return np.maximum(x @ w1 + b1, 0) @ w2 + b2 + (self.rerun_shift if rerun else 0.0)

    def _run(self, items, x, rerun):
        for item in items:
            if isinstance(item, Region):
                self.entered += not rerun
                x = self._run(item.items, x, rerun)
            else:
                x = self._block(item, x, rerun)
        return x

    def _backward(self, items, x, g, grads, rerun):
        inputs = []
        for item in items:  # the items' inputs: from the region's own, rerun
            inputs.append(x)
            x = self._run((item,), x, rerun) if rerun else x
        for item, x_in in reversed(list(zip(items, inputs, strict=True))):
            if isinstance(item, Region):
                g = self._backward(item.items, x_in, g, grads, True)
                continue
            w1, b1, w2, _ = self.data.blocks[item]
            h = x_in @ w1 + b1
            a = np.maximum(h, 0)
            g_h = (g @ w2.T) * (h > 0)
            grads[item] = (x_in.T @ g_h, g_h.sum(0), a.T @ g, g.sum(0))
            g = g_h @ w1.T
        return g

    def _step(self):
        x = self.data.x
        self.matmuls = self.entered = 0
        inputs, y = [], x
        for item in self.items:  # the forward pass keeps each top-level item's input
            inputs.append(y)
            y = self._run((item,), y, False)
        forward = self.matmuls
        grads = [None] * len(self.data.blocks)
        g = self.data.cotangent
        for item, x_in in reversed(list(zip(self.items, inputs, strict=True))):
            g = self._backward((item,), x_in, g, grads, False)
        return y, grads, forward

    def measure(self):
        _, _, forward = self._step()
        forwards = (forward, self.matmuls - forward)
        return ScheduleStatic(forwards, self.peak_bytes, "none", self.entered)

    def values(self):
        y, grads, _ = self._step()
        return Values(y, grads)

    def step(self):
        self._step()


class NumpyStack:
    """A bench module over the numpy stack; its mutants override `items`."""

    FRAMEWORK = "numpy"
    SCHEDULES: ClassVar = {n: "-" for n in ("none", "every", "segments", "nested", "binomial")}
    SCHEDULES_NOT_EXPRESSIBLE: ClassVar = {"budget": "no solver"}
    SCHEDULE_DEPARTURES: ClassVar[dict[str, str]] = {}
    rerun_shift = 0.0

    def items(self, schedule, L):
        return schedule.placement(L)

    def schedule_case(self, schedule, data):
        parsed = Schedule.parse(schedule)
        items = self.items(parsed, len(data.blocks))
        return NumpyCase(parsed.label, items, data, self.rerun_shift)

    def canonical_values(self, schedule, data):
        return NumpyCase("none", tuple(range(len(data.blocks))), data).values()

    def versions(self):
        return {}


class EverywhereAsSegments(NumpyStack):
    """Claims segments(s), places a region on every block."""

    def items(self, schedule, L):
        return (
            Schedule("every").placement(L)
            if schedule.name == "segments"
            else super().items(schedule, L)
        )


class FlatNested(NumpyStack):
    """nested(...) whose inner levels are not remat'd: only the outer regions."""

    def items(self, schedule, L):
        if schedule.name != "nested":
            return super().items(schedule, L)
        size = L // schedule.args[0]
        return tuple(Region(tuple(range(s, s + size))) for s in range(0, L, size))


class ShiftingRerun(NumpyStack):
    """A rerun that changes the values: it adds 1e-3 to each rerun block's output."""

    rerun_shift = 1e-3


class HoldsEightPerLevel(NumpyStack):
    """Its peak instrument reads the model plus 8 units per level of nesting, as a reentrant
    backward holding much per open region would."""

    def schedule_case(self, schedule, data):
        case = super().schedule_case(schedule, data)
        L, (rows, width) = len(data.blocks), data.x.shape
        placement = Schedule.parse(schedule).placement(L)
        deepest = max((depth for depth, _ in regions(placement)), default=0)
        units = Schedule.parse(schedule).peak_activations(L).units + 8 * deepest
        case.peak_bytes = units * rows * width * 4
        return case


class EarlyStopUndeclared(NumpyStack):
    """Counts below the model (binomial placed as segments(L), fewer reruns), no reason."""

    def items(self, schedule, L):
        if schedule.name == "binomial":
            return Schedule("segments", (L,)).placement(L)
        return super().items(schedule, L)


def _as_segments_matmuls(items):
    """EarlyStopUndeclared's forward matmuls, counted by hand: binomial placed as segments(L),
    each of its L - 1 one-block regions rerun once: 2 L forward + 2 (L - 1) rerun."""
    L = len(Region(tuple(items)).blocks)
    return 2 * L + 2 * (L - 1)


#: Where a binomial placement's matmuls fall (`EarlyStopUndeclared`), said three ways.
IN_WORDS = "an early stop, upstream"
COUNTED = CountModel(IN_WORDS, "upstream.py:1", {"forward_matmuls": _as_segments_matmuls})
MISSED = CountModel(IN_WORDS, "upstream.py:1", {"forward_matmuls": lambda items: 7})


class ExcusedInWords(EarlyStopUndeclared):
    """The early stop's counts, excused by a reason in words: no count model."""

    SCHEDULE_DEPARTURES: ClassVar = {"binomial": IN_WORDS}


class CountMissed(EarlyStopUndeclared):
    """The early stop's counts, excused by a count model the measurement does not meet."""

    SCHEDULE_DEPARTURES: ClassVar = {"binomial": MISSED}


SETTINGS = Settings(depths=(1, 2, 4, 8), batch=4, features=8, repeats=1, max_repeats=1)


def _swept(module):
    results, failed = bench.run(SETTINGS, {"numpy": module})
    assert not failed
    return results


def test_a_faithful_stack_meets_the_model_everywhere():
    results = _swept(NumpyStack())
    assert {r.depth for r in results} == set(SETTINGS.depths)
    assert len(results) == sum(len(bench.schedules_at(L)) for L in SETTINGS.depths)
    for r in results:
        assert r.values_within, r
        assert sum(r.forward_matmuls) == r.model_matmuls, r  # it reruns every block
        assert r.regions == r.model_regions, r
        assert r.flags == [], r
    assert bench.unexplained(results) == []


@pytest.mark.parametrize(
    ("mutant", "schedule", "says"),
    [
        (EverywhereAsSegments(), "segments", "forward matmuls"),
        (FlatNested(), "nested(2,2,2)", "forward matmuls"),
        (ShiftingRerun(), "segments", "values off"),
        (EarlyStopUndeclared(), "binomial", "forward matmuls"),
        (ExcusedInWords(), "binomial", "a reason in words, which excuses nothing"),
        (CountMissed(), "binomial", "missed"),
    ],
)
def test_each_schedule_mutant_is_caught(mutant, schedule, says):
    caught = [r for r in bench.unexplained(_swept(mutant)) if r.schedule.startswith(schedule)]
    assert caught, f"{type(mutant).__name__} passed the schedule bench"
    assert all(any(says in flag for flag in r.flags) for r in caught)


def test_a_count_model_that_the_measurement_meets_explains_its_figure_and_says_both():
    mutant = EarlyStopUndeclared()
    mutant.SCHEDULE_DEPARTURES = {"binomial": COUNTED}  # this instance's
    results = _swept(mutant)
    flagged = [r for r in results if r.flags]
    assert flagged
    assert bench.unexplained(results) == []
    for r in flagged:
        L = r.depth
        assert r.departure == IN_WORDS
        assert r.departure_reference == "upstream.py:1"
        assert r.departure_predicted == {"forward_matmuls": 4 * L - 2}
        assert r.departure_measured == {"forward_matmuls": 4 * L - 2}
    data = json.loads(json.dumps(bench.report_data(SETTINGS, {"numpy": mutant}, results, {})))
    rows = [r for r in data["results"] if r["flags"]]
    assert [r["departure_measured"] for r in rows] == [r["departure_predicted"] for r in rows]
    assert "predicts forward_matmuls; upstream.py:1" in data["departures"]["numpy"]["binomial"]
    shown = markdown.document(kind.document(data))
    row = "| numpy | binomial(2) | 8 | forward_matmuls | 30 | 30 | 44 | ✓ | upstream.py:1 |"
    assert row in shown


def test_a_departure_in_words_or_missed_by_its_count_explains_nothing_and_says_why():
    for mutant, says in ((ExcusedInWords(), "in words"), (CountMissed(), "predicts 7")):
        caught = bench.unexplained(_swept(mutant))
        assert caught
        assert all(says in r.unexplained_flags[0] for r in caught), caught
    data = bench.report_data(SETTINGS, {"numpy": ExcusedInWords()}, [], {})
    assert "excuses nothing" in data["departures"]["numpy"]["binomial"]


def _held(declared):
    mutant = HoldsEightPerLevel()
    mutant.SCHEDULE_DEPARTURES = {"binomial": declared} if declared else {}  # this instance's
    return [r for r in _swept(mutant) if r.schedule.startswith("binomial")]


def test_a_peak_past_the_model_is_caught_unless_a_departure_counts_it():
    caught = [r for r in _held(None) if r.unexplained_flags]
    assert caught, "a peak 8 units a level past the model passed"
    assert all("peak" in flag for r in caught for flag in r.unexplained_flags)
    counted = _held(Departure("a reentrant backward, upstream", held_per_level=8))
    assert any(r.flags for r in counted)
    assert bench.unexplained(counted) == []


def test_a_count_of_every_region_covers_each_schedule_that_places_regions():
    def peak(items):
        return 7

    found = every_region("reason", "file.py:1", peak)
    assert REGION_SCHEDULES == ("every", "segments", "nested", "binomial")
    assert found == dict.fromkeys(
        REGION_SCHEDULES, CountModel("reason", "file.py:1", {"peak_units": peak})
    )
    assert found["nested"].predict(()) == {"peak_units": 7}


def test_a_departure_explains_no_more_than_its_count():
    # the same peaks, declared as one unit a level: a reason that understates is caught
    results = _held(Departure("a reentrant backward, upstream", held_per_level=1))
    caught = bench.unexplained(results)
    assert caught
    assert all("its departure predicts" in r.unexplained_flags[0] for r in caught)
    assert all(r.unexplained_flags[0].endswith("missed") for r in caught)


def test_a_departure_never_explains_values():
    mutant = ShiftingRerun()
    mutant.SCHEDULE_DEPARTURES = {"segments": "an early stop, upstream"}  # this instance's
    caught = [r for r in bench.unexplained(_swept(mutant)) if r.schedule.startswith("segments")]
    assert caught
    assert all(r.unexplained_flags[0].startswith("values off") for r in caught)


def test_the_values_bound_catches_a_changed_value_and_holds_float64():
    data = schedule_values.values_data(4)
    bound = schedule_values.bounds(data)
    exact = NumpyCase("none", tuple(range(4)), _as(data, np.float64)).values()
    found = NumpyCase("none", tuple(range(4)), data).values()
    assert schedule_values.compare(found, exact, bound).within  # float32 against exact
    shifted = Values(found.y + 1e-3, found.grads)
    assert not schedule_values.compare(shifted, exact, bound).within


def _as(data: Data, dtype) -> Data:
    return Data(
        [tuple(a.astype(dtype) for a in b) for b in data.blocks],
        data.x.astype(dtype),
        data.cotangent.astype(dtype),
    )


def test_the_values_bound_is_per_row():
    data = bench.measure.make_data(SETTINGS, 2)
    with pytest.raises(ValueError, match=r"data\.x must have one row"):
        schedule_values.bounds(data)


@pytest.mark.parametrize("L", [1, 2, 3, 4, 8, 64, 128, 256])
def test_the_schedules_run_are_valid_at_their_depth(L):
    for schedule in bench.schedules_at(L):
        assert len(schedule.placement(L)) >= 1  # a bad depth would raise, naming L


def test_the_report_names_its_kind_and_renders():
    results = _swept(EverywhereAsSegments())
    data = json.loads(json.dumps(bench.report_data(SETTINGS, {"numpy": NumpyStack()}, results, {})))
    assert data["kind"] == "bench-schedules"
    assert data["schema"] == bench.SCHEMA
    assert reports.kind_of(data) == "bench-schedules"
    text = markdown.document(kind.document(data))
    assert "segments(2)" in text
    assert "✗ forward matmuls" in text
    assert "numpy · budget: not expressible (no solver)" in text


def test_families_join_a_schedule_across_depths():
    assert family("nested(8,8)") == family("nested(4,2)") == "nested 2-level"
    assert family("nested(2,2,2)") == "nested binary"
    assert family("segments(8)") == family("segments(4)") == "segments"
    assert family("binomial(4)") == "binomial(4)"


def test_the_docs_state_the_bench_s_depths_and_acceptance():
    from pathlib import Path

    text = " ".join((Path(__file__).parents[3] / "docs" / "SCHEDULES.md").read_text().split())
    assert f"L = {bench.DEPTHS[0]} to {bench.DEPTHS[-1]}" in text
    assert f"{', '.join(map(str, bench.THOROUGH_DEPTHS[len(bench.DEPTHS) :]))} too" in text.replace(
        " and ", ", "
    )
    peak = f"from {bench.PEAK_LOW} times the model to {bench.PEAK_HIGH} times it plus "
    assert peak + f"{bench.PEAK_SLACK_UNITS} units" in text
    assert "less one per region" in text
    assert f"error-analysis bound at L = {bench.VALUES_DEPTH} and less (`VALUES_DEPTH`)" in text


def test_values_are_checked_to_the_values_depth_and_deeper_rows_say_why(monkeypatch):
    monkeypatch.setattr(bench, "VALUES_DEPTH", 2)
    results = _swept(NumpyStack())
    for r in results:
        if r.depth <= 2:
            assert r.values_within is True, r
            assert r.values_not_checked == "", r
        else:
            assert (r.values_within, r.values_worst) == (None, None), r
            assert r.values_not_checked == bench.values_too_deep(), r
            assert "L = 2 and less" in r.values_not_checked
    assert {r.depth for r in results if r.values_within is None} == {4, 8}


def test_a_stack_too_slow_for_the_default_sweep_runs_when_named_and_is_said_otherwise():
    from conformance.benchmark import DEFAULT_FRAMEWORKS, SCHEDULES_OPT_IN
    from conformance.commands import bench_schedules

    assert "mindspore" in SCHEDULES_OPT_IN  # PyNative: 336 s for the sweep alone, measured
    names, left_out = bench_schedules.chosen(None)
    assert set(names) == set(DEFAULT_FRAMEWORKS) - set(SCHEDULES_OPT_IN)
    assert left_out == {n: f"runs only when named: {w}" for n, w in SCHEDULES_OPT_IN.items()}
    assert bench_schedules.chosen(["mindspore"]) == (["mindspore"], {})


@pytest.mark.parametrize(("module", "status"), [(NumpyStack(), 0), (EverywhereAsSegments(), 1)])
def test_the_command_fails_on_an_unexplained_departure(module, status, tmp_path, monkeypatch):
    import argparse

    from conformance.commands import bench_schedules

    monkeypatch.setattr(bench_schedules, "load_frameworks", lambda names: ({"numpy": module}, {}))
    args = argparse.Namespace(
        depths=[2, 4],
        profile=None,
        repeats=1,
        batch=4,
        features=8,
        framework=["numpy"],
        out=tmp_path,
        json=False,
    )
    assert bench_schedules.command(args, SETTINGS) == status
    assert (tmp_path / "bench-schedules.json").exists()


def test_each_framework_s_best_point_is_held_to_the_optimum_at_no_more_evaluations():
    frontier = [
        {"snapshots": 1, "peak_bytes": 300, "forwards": 10},
        {"snapshots": 2, "peak_bytes": 400, "forwards": 7},
        {"snapshots": 3, "peak_bytes": 500, "forwards": 6},
    ]
    optimum = [
        {"peak_bytes": 200, "evaluations": 12},
        {"peak_bytes": 300, "evaluations": 8},
        {"peak_bytes": 600, "evaluations": 5},
    ]

    def row(schedule, matmuls, peak, depth=8, model=None):
        model = matmuls if model is None else model
        return {"framework": "numpy", "schedule": schedule, "depth": depth,
                "forward_matmuls": [matmuls, 0], "peak_bytes": peak,
                "model_matmuls": model, "least_matmuls": model - 1}  # fmt: skip

    data = {
        "settings": {"depths": [4, 8]},
        "frontier": {"8": frontier},
        "optimum": {"8": {"numpy": {"a": 1.0, "points": optimum}}},
        "results": [
            row("a", 14, 800),  # 7 evaluations: the optimum's 600 at most -> 1.33, the best
            row("b", 20, 450),  # 10 evaluations: the optimum's 300 -> 1.50
            row("c", 8, 10),  # 4 evaluations: fewer than any optimum point: not scored
            row("d", 20, 1, depth=4),  # not the deepest
            # ran 7 forwards where its model runs 6, outside its acceptance: scored at the
            # measured 7 (600 -> 1.50), and against Revolve at its model's 6 (500 -> 1.80)
            row("e", 14, 900, model=12),
        ],
    }
    table = kind.frontier_table(data)
    assert [[c.text for c in r.cells] for r in table.rows] == [
        ["numpy", "a", "7", _mib(800), _mib(600), "1.33",
         f"{_mib(400)} MiB (binomial(2))", "2.00"]
    ]  # fmt: skip
    assert kind.frontier_table({**data, "results": [row("c", 8, 10)]}) is None
    alone = kind.frontier_table({**data, "results": [row("e", 14, 900, model=12)]})
    assert [c.text for c in alone.rows[0].cells][4:] == [
        _mib(600), "1.50", f"{_mib(500)} MiB (binomial(3))", "1.80"]  # fmt: skip
    bare = kind.frontier_table({**data, "frontier": {}, "results": [row("b", 20, 450)]})
    assert [c.text for c in bare.rows[0].cells][4:] == [_mib(300), "1.50", "-", "-"]


def _mib(nbytes):
    return f"{nbytes / 2**20:.2f}"


def test_the_docs_latest_schedule_run_is_the_recorded_one():
    from tests.support.helpers import ROOT

    data = json.loads((ROOT / "docs" / "bench-schedules.json").read_text())
    text = (ROOT / "docs" / "SCHEDULES.md").read_text()
    assert "\n".join(markdown.table(kind.frontier_table(data), level=3)) in text
    assert "](bench-schedules.png)" in (ROOT / "docs" / "BENCHMARKS.md").read_text()
    assert (ROOT / "docs" / "bench-schedules.md").read_text() == markdown.document(
        kind.document(data)
    )
    prose = " ".join(text.split())
    assert f"took **{data['wall_seconds']:.0f} s** and passed" in prose
    assert not data["failed"]
    assert not any(r["unexplained_flags"] for r in data["results"])
    for row in data["results"]:  # values checked where the bench checks them, else said why
        checked = row["depth"] <= bench.VALUES_DEPTH
        assert row["values_within"] is (True if checked else None), row
        assert bool(row["values_not_checked"]) is not checked, row
    assert f"every value checked (L = {bench.VALUES_DEPTH} and less) within its bound" in prose
    at = {(r["framework"], r["schedule"]): r for r in data["results"] if r["depth"] == 64}
    nested = at["torch", "nested(2,2,2,2,2,2)"]
    assert (
        f"{sum(nested['forward_matmuls']) // 2} forwards where the model counts "
        + (f"{nested['model_matmuls'] // 2}")
        in prose
    )
    removed = at["jax", "binomial(2)"]  # XLA:CPU's removed reruns: not observable, counted
    assert removed["peak_bytes"] is None
    assert removed["peak_method"].startswith("not observable: XLA:CPU removed the reruns")
    assert "10 of `binomial(2)`'s 777 at L = 64" in prose
    assert all(r["peak_bytes"] is None for (f, _), r in at.items() if f == "mlx")
    exact = ("autograd", "deepspeed", "paddle", "tensorflow")
    assert all(r["matmul_ratio"] == 1 for (f, _), r in at.items() if f in exact)
    near = [
        r["peak_ratio"]
        for (f, s), r in at.items()
        if (r["peak_ratio"] is not None and not (f == "autograd" and s.startswith("segments"))
        and s.split("(")[0] in ("none", "every", "segments")) or (s == "nested(8,8)" and f != "mlx")
    ]  # fmt: skip
    assert f"within {max(near):.2f} times the model" in prose
    assert f"`segments` ({at['autograd', 'segments(8)']['peak_ratio']:.2f}:" in prose
    for framework in ("deepspeed", "paddle", "tensorflow", "jax", "autograd", "torch"):
        for said in data["departures"][framework].values():  # each a count model, no words
            assert "(predicts " in said, (framework, said)
            assert "in words" not in said, (framework, said)
    assert "Paddle 2 units, DeepSpeed 1 (2 where the region is not its level's last item)" in prose
    optimum = [r.ratio for r in against_optimum.against(data)]
    assert min(optimum) >= 1  # every measured point on or above the optimum
    best = kind.frontier_table(data)
    ratios = [float(row.cells[5].text) for row in best.rows]
    assert f"{min(ratios):.2f} to {max(ratios):.2f} times it" in prose


class WithoutTheCanonical(NumpyStack):
    """A sweep without the canonical's bench module (JAX's), which makes the reference values:
    `bench --schedules --framework torch`."""

    def __getattribute__(self, name):
        if name == "canonical_values":
            raise AttributeError(name)
        return super().__getattribute__(name)


def test_values_that_cannot_be_checked_say_why_on_the_row_in_the_summary_and_the_json(
    tmp_path, monkeypatch, capsys
):
    import argparse

    from conformance.commands import bench_schedules

    module = WithoutTheCanonical()
    monkeypatch.setattr(bench_schedules, "load_frameworks", lambda names: ({"numpy": module}, {}))
    args = argparse.Namespace(depths=[2], profile=None, repeats=1, batch=4, features=8,
                              framework=["numpy"], out=tmp_path, json=False)  # fmt: skip
    assert bench_schedules.command(args, SETTINGS) == 0  # not a failure: said, not hidden
    data = json.loads((tmp_path / "bench-schedules.json").read_text())
    why = bench.values_not_checked()
    assert "--framework jax" in why
    for row in data["results"]:
        assert row["values_within"] is None
        assert row["values_not_checked"] == why  # the reason, never a bare null
    rows = len(data["results"])
    assert data["values_not_checked"] == {why: rows}
    said = f"values of {rows} of {rows} rows {why}"
    table = (tmp_path / "bench-schedules.md").read_text()
    assert "| not checked |" in table  # on each row
    assert said in " ".join(table.split())  # in the notes under the table
    assert said in " ".join(capsys.readouterr().err.split())  # and in the command's summary
