"""`bench --policies` prints output, not a log (issue 60, item 4): its table by the terminal
renderer (not raw Markdown) and its load as words, never a Python dict's repr."""

from __future__ import annotations

import argparse

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
