"""The speed budgets: tools/speed.py's units, docs/speed.json's figures, and what the docs say.

The figures are recorded measurements (the tool writes them); these tests read them, and never
time anything themselves.
"""

from __future__ import annotations

import importlib.util
import json
import re
import statistics
import sys

import pytest

from tests.support.helpers import ROOT


def _load_tool():
    spec = importlib.util.spec_from_file_location("speed_tool", ROOT / "tools" / "speed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


speed = _load_tool()
RECORDS = speed.load()


def test_benchmarks_md_shows_the_recorded_figures_as_the_tool_renders_them():
    text = (ROOT / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert speed.docs_with_table(text, RECORDS) == text, (
        "docs/BENCHMARKS.md's speed table differs from docs/speed.json: "
        "run `python tools/speed.py --write-docs`"
    )


def test_every_recorded_figure_is_a_budget_s():
    assert set(RECORDS) <= set(speed.BUDGETS), set(RECORDS) - set(speed.BUDGETS)


@pytest.mark.parametrize("label", sorted(RECORDS))
def test_a_recorded_figure_is_consistent_and_the_table_gives_its_verdict(label):
    record = RECORDS[label]
    # The units are the seconds over the unit: a figure cannot be edited alone.
    # (units to a tenth, the unit to the millisecond: the quotient to a thousandth or 0.06)
    assert record["units"] == pytest.approx(
        record["seconds"] / record["unit_seconds"], rel=1e-3, abs=0.06
    )
    calibration = record["calibration_before"] + record["calibration_after"]
    assert len(calibration) == 2 * speed.ROUNDS
    assert record["unit_seconds"] == pytest.approx(statistics.median(calibration), abs=0.002)
    # Over its budget, or a command that failed, the table says so beside the figure.
    (row,) = [line for line in speed.table(RECORDS).splitlines() if line.startswith(f"| {label}:")]
    bad = record["units"] > speed.BUDGETS[label][0] or record["exit_code"] != 0
    assert (f"**{record['units']}** ✗" in row) == bad, row


def test_a_figure_over_its_budget_by_10_percent_or_less_says_so():
    label, (budget, _) = next(iter(speed.BUDGETS.items()))
    base = {"seconds": 1.0, "unit_seconds": 1.0, "commit": "c", "date": "d", "exit_code": 0}

    def row(units, exit_code=0):
        record = dict(base, units=units, exit_code=exit_code)
        return speed.table({label: record}).splitlines()[2]

    assert "✗" not in row(budget)
    near = round(budget * 1.1, 1)
    assert f"**{near}** ✗ (within 10 %)" in row(near)
    beyond = row(budget * 1.2)
    assert "✗" in beyond
    assert "within" not in beyond
    assert "✗ (exit 1)" in row(budget * 1.05, exit_code=1)


def test_a_label_without_a_figure_reads_not_measured():
    table = speed.table({})
    assert table.count("not measured") == len(speed.BUDGETS)


def test_the_readme_states_the_budgets_the_tool_holds():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How long it takes")[1].split("\n## ")[0]
    stated = [int(n) for n in re.findall(r"\b(\d+)\b(?= units|,| cold| warm|\.| under)", section)]
    budgets = {budget for budget, _ in speed.BUDGETS.values()}
    assert budgets <= set(stated), f"the README states {stated}, the tool holds {budgets}"
    # Each beside its own command.
    b = {label: budget for label, (budget, _) in speed.BUDGETS.items()}
    said = (
        f"the fast tier at most {b['fast tier']} units, the full tier {b['full tier']}, "
        f"`python -m conformance` {b['default run, cold']} cold and {b['default run, warm']} "
        f"warm, `compare` {b['compare']}, `list` under {b['list']}."
    )
    assert said in " ".join(section.split())


def test_the_readme_states_no_time_of_its_own():
    # Times live in docs/speed.json and BENCHMARKS.md's table made from it: a time in the
    # README would be a figure no record holds (it said "about 1 s" and "minutes").
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    times = re.findall(
        r"\b\d+(?:\.\d+)?\s*(?:s|ms|µs|min|h)\b|\b(?:seconds?|minutes?|hours?)\b", readme
    )
    assert not times, times


def test_a_command_s_time_is_divided_by_the_median_calibration(monkeypatch, tmp_path):
    times = iter([2.0, 2.2, 2.4, 1.8, 2.0, 2.2])
    monkeypatch.setattr(speed, "calibration_workload", lambda: next(times))
    record = speed.measure([sys.executable, "-c", "pass"], "list")
    assert record["unit_seconds"] == 2.1  # the median of the six: 2.0 and 2.2 in the middle
    assert record["units"] == pytest.approx(record["seconds"] / 2.1, abs=0.05)
    assert record["exit_code"] == 0


def test_the_tool_records_the_command_s_exit_code_and_keeps_other_labels(tmp_path, monkeypatch):
    monkeypatch.setattr(speed, "calibration_workload", lambda: 1.0)
    record_file = tmp_path / "speed.json"
    record_file.write_text(json.dumps({"list": {"units": 0.3}}))
    code = speed.main(
        ["--label", "compare", "--json", str(record_file), "--", sys.executable, "-c", "exit(3)"]
    )
    assert code == 3
    records = json.loads(record_file.read_text())
    assert records["list"] == {"units": 0.3}
    assert records["compare"]["exit_code"] == 3


def test_a_label_outside_the_budgets_is_refused_naming_the_argument(capsys):
    with pytest.raises(SystemExit) as stopped:
        speed.main(["--label", "fast", "--", "true"])
    assert stopped.value.code == 2
    assert "--label" in capsys.readouterr().err


def test_the_workload_is_the_documented_one():
    text = " ".join((ROOT / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8").split())
    assert speed.LOOP_ITERATIONS == 15_000_000
    assert "fifteen million additions" in text
    assert speed.MATMUL_REPEATS == 18
    assert f"eighteen {speed.MATMUL_SIZE} x {speed.MATMUL_SIZE} float64 matmuls" in text
