"""Output that never loses data unsaid: every command's report at 100 columns off a terminal.

The reports are rendered from made-up data with every registered port (run,
compare, bench) and, for merge, by the real command in a subprocess (stdout
a pipe, so not a terminal). At 100 columns each port's figures must all be there,
whole: no dropped column, no number cut, no ellipsis; a narrower console leaves
columns out in their stated order and names them (issue 76). And `NO_COLOR` /
`--no-color` leave no escape code at all.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest

import implementations
from conformance.benchmark import BenchReport
from conformance.benchmark import measure as bench_measure
from conformance.benchmark import render as bench_render
from conformance.checking.properties import PROPERTIES
from conformance.comparison import failed as compare_failed
from conformance.comparison import measure, rows
from conformance.running.mutation import MutantResult
from conformance.running.runner import Outcome
from conformance.running.suite import PortReport, SuiteReport
from conformance.tables.kinds import bench as bench_tables
from conformance.tables.kinds import compare as render
from conformance.tables.kinds import run as run_report
from conformance.tables.model import Column, TableBuilder
from conformance.tables.render import terminal as terminal_render
from conformance.terminal import style as terminal_style
from implementations.contract import SavedTensor

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

PORTS = list(implementations.BUILTIN)
# compare's rows: the ports, and MindSpore in graph mode (a row, not a port).
COMPARED = [*PORTS, *rows.declared()]
ESCAPE = "\x1b"
#: The width every figure must fit whole (issue 76: a 100-column terminal).
WIDTH = 100
# What torch reports as its matmul setting: the one that squeezed the other columns out.
TORCH_SETTING = "float32_matmul_precision=highest, cuda.matmul.allow_tf32=False (TF32 off)"


@pytest.fixture(autouse=True)
def default_output(monkeypatch):
    """Each test starts from the default output options, with no NO_COLOR, at 100 columns."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    terminal_style.configure()
    yield
    terminal_style.configure()


class Pipe(io.StringIO):
    """Captured output that is not a terminal, as a CI log or `| tee` is."""

    def isatty(self) -> bool:
        return False


def print_summary(comparison, console) -> None:
    """compare's summary table alone, as `compare` prints it first."""
    terminal_render.print_block(console, render.terminal_summary(comparison))


def rendered(print_report, data) -> str:
    out = Pipe()
    print_report(data, terminal_style.console(file=out))
    text = out.getvalue()
    assert ESCAPE not in text
    assert "…" not in text, text  # rich's mark for a cut cell
    return text


def _starts(text: str, name: str) -> list[int]:
    """Where a row starting with `name` (a whole word, first on its line) begins."""
    return [m.start(1) for m in re.finditer(rf"^\s*({re.escape(name)})(?![\w])", text, re.M)]


def _port_lines(text: str, name: str) -> str:
    """The text from the port's name to the next port's name (its rows)."""
    start = _starts(text, name)[0]
    ends = [e for other in PORTS if other != name for e in _starts(text, other) if e > start]
    return text[start : min(ends) if ends else len(text)]


# --- run -------------------------------------------------------------------------------


def _suite_report() -> SuiteReport:
    ports = []
    for i, name in enumerate(PORTS):
        outcomes = [
            Outcome(name, p.key, "pass", examples=100 + i, worst_ratio=0.1 + i / 100, seconds=1)
            for p in PROPERTIES
        ]
        outcomes[-1] = Outcome(name, PROPERTIES[-1].key, "fail", examples=7 + i, message="bad")
        ports.append(PortReport(name, framework=f"stack{i}", outcomes=outcomes, seconds=1000.0 + i))
    mutants = [MutantResult("m1", "a bug", "killed", killed_by="c_vjp", message="[m1] caught")]
    return SuiteReport("dev", 100, "menu", "flax_linen", ports, mutants, seconds=1234.0)


def test_run_matrix_keeps_every_port_and_figure_at_100_columns():
    text = rendered(run_report.print_report, _suite_report())
    for i, name in enumerate(PORTS):
        row = _port_lines(text, name)
        assert f"✓{100 + i}" in row, name
        assert f".{10 + i}" in row.replace("0.", "."), name  # its worst ratio
        assert f"@{7 + i}" in row, name
        assert f"stack{i}" in row, name
        assert f"{1000 + i}s" in row, name
    for prop in PROPERTIES:
        assert f"({prop.id})" in text
    # The legend explains every symbol the matrix uses.
    for symbol in ("✓N", "✗fail", "@N", "ref", "skip", "xfail", "·", "wall"):
        assert symbol in text, symbol


# --- compare ---------------------------------------------------------------------------


def _residuals(count, nbytes, recomputed):
    saved = [{"shape": [32], "dtype": "float32", "origin": "input", "bytes": 128, "note": ""}]
    saved += [{"shape": [16], "dtype": "float32", "origin": "activation", "bytes": 64}] * (
        count - 1
    )
    return measure.Residuals(count, nbytes, saved, recomputed, 1, "hand")


def _comparison() -> measure.Comparison:
    rows = []
    for i, name in enumerate(COMPARED):
        bits = {k: measure.Bits(20.0 + i / 10 + j / 100, 0.01) for j, k in enumerate(
            ("output", "exercise", "w1", "b1", "w2", "b2", "x"))}  # fmt: skip
        diffs = {k: measure.Diff(1e-7, 1e-5, 0.01 * (i + 1)) for k in ("w1", "b1", "w2", "b2", "x")}
        rows.append(
            measure.PortComparison(
                name,
                "available",
                versions={"framework": f"1.{i}.0", "long-distribution-name": "12.34.56+cpu"},
                reference=i == 0,
                output=measure.Diff(1e-7, 1e-5, 0.01),
                exercise=measure.Diff(1e-7, 1e-5, 0.01),
                gradients=diffs,
                precision=bits,
                matmul_precision={"default": TORCH_SETTING, "pinned": TORCH_SETTING},
                residuals={
                    "off": _residuals(3, 320, {}),
                    "on": _residuals(1, 128, {"dot_general": 2, "add": 1}),
                },
                warm_forward_seconds=0.0123 + i / 1000,
                warm_vjp_seconds=0.0456,
                warm_spread={"forward": 0.0011, "vjp": 0.0022},
                warm_samples=9,
            )
        )
    return measure.Comparison(
        0, 32, 16, "flax_linen", rows, 42.0, load={"before": 7.9, "after": 6.9}, cores=2
    )


def test_compare_keeps_every_port_and_figure_at_100_columns():
    text = rendered(render.print_comparison, _comparison())
    assert "D=32 F=16" in text
    assert "as run" not in text  # no command line given
    for i, name in enumerate(COMPARED):
        assert text.count(name) >= 3, name  # at a glance, precision, recomputed (and agreement)
        for j in range(6):  # every bits column of the precision table
            assert f"{20.0 + i / 10 + j / 100:.1f}" in text
        assert f"{(0.0123 + i / 1000) * 1e3:.3g} ± 1.1" in text, name  # median ± half IQR
        assert f"1.{i}.0" in text, name
    # The whole setting, once for all the ports that share it; KiB that D = 32 does not
    # round to 0.1.
    flat = " ".join(text.split())
    setting = "float32_matmul_precision=highest, cuda.matmul.allow_tf32=False"
    assert flat.count(f"{setting} → {setting}") == 1
    assert "0.312 → 0.125" in text
    assert "on: input" in text
    assert "3 ops" in text
    assert "2 matmul" in text
    assert "n=9" in text
    # The recomputed ops are listed once for all the ports that share them.
    assert flat.count("add x1, dot_general x2") == 1
    # Loaded past its cores: a warning, with both load averages.
    assert "load average 7.9 before, 6.9 after (its own processes too), 2 cores" in flat
    assert "warning" in text


def test_compare_keeps_the_figures_beside_ports_that_are_unavailable_or_broken():
    # The quick start's install has no engines: their rows give a long reason, which must
    # wrap rather than squeeze every other column (and cut their numbers) at 80 columns.
    comparison = _comparison()
    reason = "needs 'mindspore', not installed (pip install 'remat-conformance[mindspore]')"
    comparison.ports.append(measure.PortComparison("mindspore", "unavailable", reason=reason))
    broken = measure.PortComparison("paddle", "available")
    broken.error = "in a process of its own: killed by SIGSEGV; its last lines: " + "x " * 40
    comparison.ports.append(broken)
    text = rendered(print_summary, comparison)
    flat = " ".join(text.split())
    assert reason in flat.replace("' remat", "'remat")  # whole, wrapped between words
    assert "killed by SIGSEGV" in flat
    for i, name in enumerate(COMPARED):
        assert name in text
        assert f"{(0.0123 + i / 1000) * 1e3:.3g} ± 1.1" in text, name


def test_compare_title_says_the_command_as_run():
    comparison = _comparison()
    comparison.command = "compare --dim 32 --features 16"
    text = rendered(print_summary, comparison)
    assert "as run: compare --dim 32 --features 16" in " ".join(text.split())


def test_every_cross_of_the_verdict_fails_compare():
    assert not compare_failed(_comparison())
    for spoil in (
        lambda row: row.gradients.update(x=measure.Diff(1.0, 1e-5, 3.0)),
        lambda row: row.precision.update(x=measure.Bits(11.0, 40.0)),
        lambda row: row.residuals.update(on=row.residuals["off"]),
    ):
        comparison = _comparison()
        spoil(comparison.ports[3])
        assert compare_failed(comparison)


def test_compare_verdict_reads_without_colour():
    comparison = _comparison()
    bad = comparison.ports[1]
    bad.gradients["x"] = measure.Diff(1.0, 1e-5, 3.0)  # over the bound
    bad.precision["x"] = measure.Bits(11.0, 40.0)  # TF32-like: fails the tier
    bad.residuals["on"] = bad.residuals["off"]  # the checkpoint saved nothing
    text = rendered(print_summary, comparison)
    row = _port_lines(text, bad.name)
    # On one line in a terminal, each mark joined to its word (issue 76: two lines a port).
    assert "✗agree" in row
    assert "✗tier" in row
    assert "✗remat" in row
    assert compare_failed(comparison)
    good = _port_lines(text, comparison.ports[2].name)
    assert "✓agree" in good
    assert "✓tier" in good
    assert "✓remat" in good


# --- bench -----------------------------------------------------------------------------


def _bench_report() -> BenchReport:
    results = []
    for framework, variant in (("jax", "scan"), ("torch", "compiled"), ("tensorflow", "xla")):
        for depth in (1, 32):
            for mode in bench_measure.MODES:
                results.append(
                    bench_measure.Result(
                        framework,
                        variant,
                        mode,
                        depth,
                        1024,
                        256,
                        3,
                        3 * 2**20 + 12345,
                        2**20,
                        2**21,
                        2**22,
                        6 * depth,
                        [],
                        [0.01123, 0.0112, 0.0113],
                    )
                )
    bench_measure.attach_timings(results, [r.step_seconds for r in results])
    return BenchReport(bench_measure.Settings(depths=(1, 32)), results)


def test_bench_table_keeps_every_column_at_100_columns():
    report = _bench_report()
    text = rendered(bench_render.print_report, report)
    for header in ("saved MiB", "saved/min", "XLA temp MiB", "peak MiB", "step ms", "time/none"):
        assert all(word in text for word in header.split()), header
    for line in bench_tables.rows([r.to_json() for r in report.results]):
        # Every cell of every row, whole (a row may sit on wrapped lines).
        for cell in line[3:]:
            assert cell in text, (line, cell)
        assert line[1] in text
    assert "11.23" in text


# --- merge: the real command, its stdout a pipe ------------------------------------------


def test_merge_command_keeps_every_port_at_100_columns_through_a_pipe(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_suite_report().to_json(), default=str))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    env["COLUMNS"] = str(WIDTH)
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "merge", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr  # the made-up report has failures
    text = result.stdout
    assert ESCAPE not in text
    assert "…" not in text
    for i, name in enumerate(PORTS):
        row = _port_lines(text, name)
        assert f"✓{100 + i}" in row, name
        assert f"@{7 + i}" in row, name
        assert f"{1000 + i}s" in row, name


# --- escape codes ---------------------------------------------------------------------


def _forced_terminal(*argv: str, no_color: bool) -> str:
    """`python -m conformance *argv` as if on a colour terminal (FORCE_COLOR)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    env["FORCE_COLOR"] = "1"
    if no_color:
        env["NO_COLOR"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "conformance", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def test_no_color_and_plain_remove_every_escape_code(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_suite_report().to_json(), default=str))
    coloured = _forced_terminal("merge", str(path), no_color=False)
    assert ESCAPE in coloured  # the test can fail: a terminal gets colour and bold
    assert re.search(r"\x1b\[1m", coloured)  # bold, which NO_COLOR alone left in
    assert ESCAPE not in _forced_terminal("merge", str(path), no_color=True)
    for flag in ("--no-color", "--plain"):
        assert ESCAPE not in _forced_terminal("merge", str(path), flag, no_color=False), flag


def test_width_lays_out_for_n_columns_and_plain_uses_ascii_rules():
    out = Pipe()
    terminal_style.configure(width=120, plain=True)
    console = terminal_style.console(file=out)
    assert console.width == 120
    run_report.print_report(_suite_report(), console)
    text = out.getvalue()
    assert "─" not in text
    assert "-" in text
    assert ESCAPE not in text


def test_a_table_wider_than_the_width_leaves_columns_out_in_its_order_and_names_them():
    columns = [Column("port"), Column("kept", drop=-1), Column("first"), Column("second", drop=1)]
    table = TableBuilder("t", columns)
    table.add(["a_rather_long_port_name", "12345678", "1.2345678901234567890", "9.87654321"])
    for width, gone in ((80, []), (60, ["second"]), (45, ["first", "second"])):
        out = Pipe()
        terminal_style.configure(width=width)
        terminal_render.print_block(terminal_style.console(file=out), table.build())
        text = out.getvalue()
        assert max(len(line) for line in text.splitlines()) <= width, text
        for name, cell in zip(("first", "second"), table.rows[0].cells[2:], strict=True):
            assert (cell.text in text) is (name not in gone), (width, text)
        flat = " ".join(text.split())
        said = re.findall(r"left out to fit .*? shows them\)", flat)
        if gone:
            assert said == [
                f"left out to fit {width} columns: {', '.join(gone)} (--width 68 shows them)"
            ]
        else:
            assert not said
    # The first column and a `drop=-1` one stay: past them, a long word is folded, not cut.
    out = Pipe()
    terminal_style.configure(width=20)
    terminal_render.print_block(terminal_style.console(file=out), table.build())
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 20, text
    assert "…" not in text
    assert "left out to fit 20 columns: first, second" in " ".join(text.split())


def test_residual_roles_and_matmul_counts():
    saved = [
        {"origin": "input"},
        {"origin": "activation"},
        {"origin": "activation"},
        {"origin": "parameter"},
    ]
    assert render.roles(saved) == "input, activationx2"
    assert render.roles([{"origin": "parameter"}]) == "nothing"
    ops = {"dot_general": 2, "aten.addmm": 1, "MatMul": 1, "add": 3, "Relu": 1}
    assert render.matmuls(ops) == 4
    assert _residuals(2, 1, {}).saved[1]["origin"] in SavedTensor.KEPT


def test_an_unavailable_mutant_reads_as_not_run_never_as_a_failure():
    report = _suite_report()
    report.mutants.append(
        MutantResult("m2", "another bug", "unavailable", message="its port 'x' is unavailable")
    )
    text = rendered(run_report.print_mutants, report)
    # Counted apart in the mutants' line, never a row with a ✗ (issue 76: only survivors
    # and failures get rows).
    assert not [row for row in text.splitlines() if row.split()[:1] == ["m2"]]
    assert "✗" not in text
    # m1 is no registered mutant: no stack names its property, so the line claims none.
    assert "Mutants: 1/1 killed · 1 not run (their port did not load)" in text
