"""`bench --policies` prints output, not a log (issue 60, item 4): its table by the terminal
renderer (not raw Markdown) and its load as words, never a Python dict's repr."""

from __future__ import annotations

import argparse
import dataclasses
import json

from conformance.benchmark import DEFAULTS
from conformance.commands import bench_policies


def test_the_policies_command_prints_a_table_and_no_repr(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench_policies, "load_frameworks", lambda names: ({}, {"x": "absent"}))
    monkeypatch.setattr(bench_policies, "load_average", iter([6.45458984375, 7.1]).__next__)
    args = argparse.Namespace(depths=None, framework=["x"], out=tmp_path / "out", json=False)
    bench_policies.command(args, DEFAULTS)
    out, err = capsys.readouterr()
    assert "{" not in out + err
    assert "}" not in out + err
    assert "load 6.45 before, 7.10 after" in err
    assert "|---" not in out
    assert "| ---" not in out
    assert (tmp_path / "out" / "bench-policies.md").read_text().strip()  # the file keeps it


def test_the_scale_command_prints_a_table_not_markdown(tmp_path, capsys, monkeypatch):
    from conformance.benchmark import scale
    from conformance.commands import bench

    monkeypatch.setattr(scale, "run", lambda settings, ports, say: ([], {"torch_fsdp": "x"}))
    monkeypatch.setattr(scale, "plot", lambda rows, path: None)
    args = argparse.Namespace(out=tmp_path / "out", json=False)
    assert bench._run_scale(args) == 1
    out = capsys.readouterr().out
    assert "Bench · scale over ranks" in out
    assert "| ---" not in out
    assert "| --- |" in (tmp_path / "out" / "scale.md").read_text()  # the file keeps it


def test_the_schedules_command_prints_through_the_renderer_method_once_verdict_last(
    tmp_path, capsys, monkeypatch
):
    """`bench --schedules` printed raw Markdown (`values (\\|Δ\\| / bound)`), its peak method
    on every row, a Python dict for its load, and said nothing for minutes off a terminal."""
    from conformance.commands import bench_schedules
    from conformance.terminal import progress
    from tests.core.benchmark.test_bench_schedules import SETTINGS, NumpyStack

    method = "the numpy stack's own count of the bytes its backward pass holds alive"

    class Stack(NumpyStack):
        def schedule_case(self, schedule, data):
            case = super().schedule_case(schedule, data)
            measured = case.measure
            case.measure = lambda: dataclasses.replace(measured(), peak_method=method)
            return case

    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(bench_schedules, "load_frameworks", lambda n: ({"numpy": Stack()}, {}))
    monkeypatch.setattr(bench_schedules, "load_average", iter([4.62841796875, 4.9]).__next__)
    made = []
    monkeypatch.setattr(
        bench_schedules, "Steps", lambda *a, **k: made.append(a) or progress.Steps(*a, **k)
    )
    args = argparse.Namespace(
        depths=[2, 4], profile=None, repeats=1, batch=4, features=8, framework=["numpy"],
        out=tmp_path, json=False,
    )  # fmt: skip
    assert bench_schedules.command(args, SETTINGS) == 0
    out, err = capsys.readouterr()
    assert [title for _, title, _ in made] == ["bench --schedules"]  # its progress: `Steps`
    assert "\\|" not in out
    assert "| ---" not in out
    assert "(|Δ|" in out  # the heading as written, not escaped
    data = json.loads((tmp_path / "bench-schedules.json").read_text())
    assert {r["peak_method"] for r in data["results"]} == {method}
    assert len(data["results"]) > 1
    assert " ".join(out.split()).count(method) == 1  # named once, under the table
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "{" not in err
    last = err.splitlines()[-1]
    assert last.startswith(f"bench --schedules passed: {len(data['results'])} cases"), last
    assert "load 4.63 before, 4.90 after, of " in last
    assert "| --- |" in (tmp_path / "bench-schedules.md").read_text()  # the file keeps it


def test_rows_whose_counts_the_instrument_cannot_see_are_counted_on_the_last_line(
    tmp_path, capsys, monkeypatch
):
    """A row whose peak is not observable was not held to the model: the last line says how
    many such rows there were, never folding them silently into the cases that passed."""
    from conformance.commands import bench_schedules
    from tests.core.benchmark.test_bench_schedules import SETTINGS, NumpyStack

    class Blind(NumpyStack):
        def schedule_case(self, schedule, data):
            case = super().schedule_case(schedule, data)
            measured = case.measure
            unseen = "not observable: this stack keeps no allocation record"
            case.measure = lambda: dataclasses.replace(
                measured(), peak_bytes=None, peak_method=unseen
            )
            return case

    monkeypatch.setattr(bench_schedules, "load_frameworks", lambda n: ({"numpy": Blind()}, {}))
    args = argparse.Namespace(
        depths=[2], profile=None, repeats=1, batch=4, features=8, framework=["numpy"],
        out=tmp_path, json=False,
    )  # fmt: skip
    assert bench_schedules.command(args, SETTINGS) == 0
    rows = len(json.loads((tmp_path / "bench-schedules.json").read_text())["results"])
    last = capsys.readouterr().err.splitlines()[-1]
    assert f"counts or peak of {rows} of {rows} rows not observable" in last, last
