"""The engines' bench stacks (Paddle, MindSpore, DeepSpeed) as the bench sees them: registered,
loaded in an order that lets them share a process, skipped with the reason where missing or
unloadable, and drawn one row each. Their measurements are tested in their own folders
(tests/paddle, tests/mindspore, tests/deepspeed); everything here imports no framework into
the test process.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

from conformance import bench
from conformance.bench import policies
from conformance.bench.measure import Result, Settings
from tests.helpers import ROOT

ENGINES = ("paddle", "mindspore", "deepspeed")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _installed(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")


def test_each_engine_has_a_bench_module_and_runs_by_default():
    for name in ENGINES:
        assert bench.FRAMEWORKS[name] == f"conformance.bench.{name}_stack"
        # Minutes of CPU at the defaults, as torch's: not opt-in as tfjs (its docstring).
        assert name in bench.DEFAULT_FRAMEWORKS
    assert {"tfjs"} == bench.OPT_IN
    # MindSpore before Paddle, both before anything else (TensorFlow above all).
    assert bench.LOAD_FIRST == ("mindspore", "paddle")


def test_the_policy_bench_runs_none_and_full_and_says_why_not_the_rest():
    for name in ENGINES:
        assert policies.POLICIES[name] == ("none", "full")
        assert set(policies.NOT_RUN[name]) == {"save_dots", "save_named", "offload_dots"}
        assert name in policies.BUILDERS
    assert "checkpoint_in_cpu" in policies.NOT_RUN["deepspeed"]["offload_dots"]


def test_paddle_loads_before_tensorflow_whatever_the_order_named():
    # Named TensorFlow first: Paddle after TensorFlow would segfault, MindSpore after Paddle
    # would not load. The bench loads MindSpore, then Paddle, then the rest.
    _installed("tensorflow", "paddle", "mindspore")
    result = _run(
        """
        import sys
        from conformance import bench
        loaded, skipped = bench.load_frameworks(["tensorflow", "paddle", "mindspore"])
        order = [m for m in sys.modules if m in ("tensorflow", "paddle", "mindspore")]
        print(list(loaded), skipped, order)
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]  # no segfault (-11)
    assert result.stdout.strip().splitlines()[-1] == (
        "['tensorflow', 'paddle', 'mindspore'] {} ['mindspore', 'paddle', 'tensorflow']"
    )


def test_paddle_after_tensorflow_is_skipped_with_the_reason_never_a_segfault():
    # A caller that imported TensorFlow itself: the Paddle stack refuses to load Paddle, and
    # the bench skips it saying why, instead of "not installed" or exit 139.
    _installed("tensorflow", "paddle")
    result = _run(
        """
        import tensorflow
        from conformance import bench
        loaded, skipped = bench.load_frameworks(["paddle"])
        print(list(loaded), "|", skipped["paddle"])
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded, reason = result.stdout.strip().splitlines()[-1].split(" | ")
    assert loaded == "[]"
    assert reason.startswith("cannot load in this process (Paddle cannot be imported after")


def test_a_missing_engine_is_skipped_with_the_reason():
    result = _run(
        """
        import sys
        for name in ("paddle", "mindspore", "deepspeed"):
            sys.modules[name] = None  # as if it were not installed
        from conformance import bench
        loaded, skipped = bench.load_frameworks(["paddle", "mindspore", "deepspeed"])
        print(list(loaded))
        for name in ("paddle", "mindspore", "deepspeed"):
            print(name, "|", skipped[name])
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "[]"
    for line, name in zip(lines[1:], ENGINES, strict=True):
        assert line.startswith(f"{name} | not installed (import of {name} halted"), line


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
    from conformance.bench import plot
    from conformance.report import tables

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
    assert "Paddle" in titles[peak_column]
    # MindSpore's peak panel says it is not measured; Paddle's and DeepSpeed's have lines.
    row = {name: drawing.axes[i * columns : (i + 1) * columns] for i, name in enumerate(ENGINES)}
    assert [t.get_text() for t in row["mindspore"][peak_column].texts] == [
        "not measured\nfor mindspore"
    ]
    for name in ("paddle", "deepspeed"):
        assert len(row[name][peak_column].get_lines()) == 2  # none and full
    table = tables.bench_table(report.to_json())
    stacks = {cells[1] for cells in table.rows}
    assert set(ENGINES) <= stacks
