"""The bench stacks as the bench sees them: declared by their stacks' manifests, loaded in an
order that lets them share a process, skipped with the reason where missing or unloadable, and
drawn one row each. Their measurements are tested in their own folders (tests/<stack>).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap

import pytest

from conformance import benchmark as bench
from conformance.benchmark.measure import Result, Settings
from implementations import manifests
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

ENGINES = ("paddle", "mindspore", "deepspeed")  # made-up rows for the plot below
ENTRIES = {e.name: (m, e) for m in manifests.manifests() for e in m.bench}


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_every_bench_stack_lives_in_its_stack_s_folder():
    assert set(bench.FRAMEWORKS) == set(ENTRIES)
    for name, (manifest, entry) in ENTRIES.items():
        assert entry.module.startswith(f"implementations.stacks.{manifest.stack}."), name
        assert (name in bench.DEFAULT_FRAMEWORKS) == (not entry.opt_in), name
        if entry.opt_in:
            assert entry.why, f"{name} runs only when named, and says why"
        notes = set(entry.notes)
        assert notes == {"saved_bytes", "temp_bytes", "peak_bytes", "matmuls", "save-mm"}, name


@pytest.mark.slow(reason="9 s alone: loads every installed framework's bench stack")
def test_every_installed_bench_stack_loads_in_order_and_declares_its_policies():
    # Named in reverse: the stacks that must load first (a segfault otherwise) still do.
    names = list(reversed(bench.DEFAULT_FRAMEWORKS))
    result = _run(
        f"""
        import json, sys
        from conformance import benchmark as bench
        from conformance.benchmark import policies
        from implementations import manifests
        loaded, skipped = bench.load_frameworks({names!r})
        first = [m.engine for m in sorted(
            (m for m in manifests.manifests() if m.load_first is not None),
            key=lambda m: m.load_first)]
        order = [m for m in sys.modules if m in first]
        declared = {{
            name: [policies.policies_of(module), list(getattr(module, "NOT_EXPRESSIBLE", {{}}))]
            for name, module in loaded.items()
        }}
        print(json.dumps([sorted(loaded), skipped, first, order, declared]))
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]  # no segfault (-11)
    loaded, skipped, first, order, declared = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted([*loaded, *skipped]) == sorted(names)
    for reason in skipped.values():
        assert reason.startswith("not installed"), skipped
    assert order == [engine for engine in first if engine in order]
    for name, (runs, cannot) in declared.items():
        assert runs[:2] == ["none", "full"], name
        assert not set(runs) & set(cannot), name


def test_loading_pauses_the_collector_and_freezes_what_was_loaded():
    """`load_frameworks` leaves the collector as it found it, and what is alive after the
    loading (here, objects made just before) frozen out of its scans."""
    pytest.importorskip("autograd")
    made_before = [[] for _ in range(1000)]  # lists: the collector tracks them
    before = gc.get_freeze_count()
    loaded, _ = bench.load_frameworks(["autograd"])
    assert list(loaded) == ["autograd"]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(made_before)
    gc.disable()
    try:
        bench.load_frameworks(["autograd"])
        assert not gc.isenabled()  # a caller's choice stands
    finally:
        gc.enable()


def test_a_missing_framework_s_bench_stack_is_skipped_with_the_reason():
    blocked = sorted({m.engine for m, e in ENTRIES.values() if not e.opt_in and not e.isolated})
    names = [n for n, (m, e) in ENTRIES.items() if not e.opt_in and not e.isolated]
    result = _run(
        f"""
        import json, sys
        for name in {blocked!r}:
            sys.modules[name] = None  # as if it were not installed
        from conformance import benchmark as bench
        loaded, skipped = bench.load_frameworks({names!r})
        print(json.dumps([list(loaded), skipped]))
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded, skipped = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == []
    for name in names:
        assert skipped[name].startswith("not installed ("), (name, skipped[name])


def _result(framework: str, mode: str, depth: int, peak: int | None, matmuls: int | None):
    return Result(
        framework=framework,
        variant="",
        mode=mode,
        depth=depth,
        batch=4,
        features=8,
        saved_count=depth,
        saved_bytes=depth * 128,
        analytic_minimum=depth * 128,
        temp_bytes=None,
        peak_bytes=peak,
        matmuls=matmuls,
        residuals=[],
        step_seconds=[0.01, 0.011, 0.012],
        time_ratios=[1.0, 1.1, 1.2] if mode == "full" else [1.0, 1.0, 1.0],
    )


def test_the_plot_and_the_report_have_a_row_per_engine():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from conformance.benchmark import plot
    from conformance.tables.kinds import bench as bench_tables

    peaks = {"paddle": 4096, "mindspore": None, "deepspeed": 8192}
    results = [
        _result(name, mode, depth, peaks[name], None if name != "deepspeed" else 6 * depth)
        for name in ENGINES
        for mode in ("none", "full")
        for depth in (1, 2)
    ]
    report = bench.BenchReport(Settings(depths=(1, 2), batch=4, features=8), results)
    drawing = plot.figure(report)
    titles = [a.get_title() for a in drawing.axes if a.get_title()]
    columns = len(titles)
    assert [a.get_ylabel() for a in drawing.axes[::columns]] == list(ENGINES)
    (peak_column,) = [i for i, t in enumerate(titles) if t.startswith("allocation peak")]
    assert "allocator" in titles[peak_column]
    # MindSpore's peak panel says it is not measured; Paddle's and DeepSpeed's have lines.
    row = {name: drawing.axes[i * columns : (i + 1) * columns] for i, name in enumerate(ENGINES)}
    assert [t.get_text() for t in row["mindspore"][peak_column].texts] == [
        "not measured\nfor mindspore"
    ]
    for name in ("paddle", "deepspeed"):
        assert len(row[name][peak_column].get_lines()) == 2  # none and full
    table = bench_tables.results_table(report.to_json())
    stacks = {row.cells[1].text for row in table.rows}
    assert set(ENGINES) <= stacks
