"""The verdict is the last line of every command (issue 76): run and compare have tests of
their own (tests/core/page/test_run_summary.py, test_compare_summary.py); here merge,
versions, list, bench and bench --policies, rendered from small data."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from conformance import merge
from conformance.benchmark import DEFAULTS
from conformance.commands import bench, bench_policies, list_ports
from conformance.terminal import style
from conformance.versions import render, summary
from tests.core.versions.test_versions import _sweep
from tests.support.helpers import ROOT

DATA = ROOT / "tests" / "data" / "report"


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


@pytest.fixture(autouse=True)
def default_output(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    style.configure()
    yield
    style.configure()


def _printed(draw) -> list[str]:
    out = Pipe()
    draw(style.console(file=out))
    return out.getvalue().splitlines()


def test_merge_says_its_verdict_last(tmp_path):
    run = json.loads((DATA / "run.json").read_text())
    failing = json.loads(json.dumps(run))
    failing["ports"][1]["outcomes"][0]["status"] = "fail"
    for number, data in enumerate((run, failing)):
        (tmp_path / f"{number}.json").write_text(json.dumps(data))
    merged = merge.combine(merge.read_all([tmp_path / "0.json", tmp_path / "1.json"]))
    lines = _printed(lambda console: merge.print_merged(merged, console))
    assert (
        lines[-1]
        == "The merge failed · 1 of 2 reports failed (#2) · 1 machine · 1 conflicting port"
    )
    merged = merge.combine(merge.read_all([tmp_path / "0.json"]))
    lines = _printed(lambda console: merge.print_merged(merged, console))
    assert lines[-1] == "The merge passed · 1 report, each passed · 1 machine"


def test_a_version_sweep_says_its_verdict_last():
    data = summary.to_json(_sweep([True, False]))
    lines = _printed(lambda console: render.print_sweep(data, console))
    assert lines[-1].startswith("The sweep of tensorflow passed · 2 of 2 version sets ran · ")


def test_list_says_how_many_ports_by_state_last(capsys):
    assert list_ports.run(argparse.Namespace(load=False)) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("21 ports: ")
    assert "found" in last
    assert list_ports.verdict(["available", "unavailable", "available"]) == (
        "3 ports: 2 available, 1 unavailable"
    )


def test_the_policies_bench_says_its_verdict_last_in_words(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench_policies, "load_frameworks", lambda names: ({}, {"x": "absent"}))
    monkeypatch.setattr(bench_policies, "load_average", iter([4.628, 4.9]).__next__)
    args = argparse.Namespace(depths=None, framework=["x"], out=tmp_path, json=False)
    bench_policies.command(args, DEFAULTS)
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("bench --policies measured nothing: every framework skipped · ")
    assert "load 4.63 before, 4.90 after, of " in last


def test_the_depth_bench_says_what_it_measured_last_with_its_load_in_words(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(bench, "load_frameworks", lambda names: ({}, {"x": "absent"}))
    monkeypatch.setattr(bench, "load_average", iter([4.628, 4.9]).__next__)
    monkeypatch.setattr(bench.render, "plot", lambda report, path: "no matplotlib here")
    args = argparse.Namespace(
        scale=False, policies=False, schedules=False, framework=["x"], out=tmp_path,
        json=False, csv=None, depths=[1], batch=None, features=None, repeats=None,
        max_repeats=None, seed=None,
    )  # fmt: skip
    assert bench.run(args) == 0
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("bench: 0 measurements of 0 frameworks · ")
    assert "load 4.63 before, 4.90 after, of " in last
    assert "{" not in last


def test_the_scale_bench_says_its_verdict_last_and_counts_its_runs(tmp_path, capsys, monkeypatch):
    def fake_run(settings, engines, progress):
        for engine in engines:
            progress(f"{engine} on 1 rank(s)")
        return [], {"torch_fsdp at N=2": "rank 1 died"}

    monkeypatch.setattr(bench.scale, "run", fake_run)
    monkeypatch.setattr(bench.scale, "plot", lambda rows, path: "no matplotlib here")
    args = argparse.Namespace(
        scale=True, policies=False, schedules=False, framework=None, out=tmp_path, json=False,
        csv=None, depths=None, batch=None, features=None, repeats=None, max_repeats=None,
        seed=None,
    )  # fmt: skip
    assert bench.run(args) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("bench --scale failed: 1 runs failed (torch_fsdp at N=2) · 0 rows · ")
    assert last.endswith(f"wrote {tmp_path}")
