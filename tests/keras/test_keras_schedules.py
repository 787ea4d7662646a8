"""Keras declares no schedules: its folder has no bench stack, and its README says so."""

from __future__ import annotations

from tests.support.helpers import ROOT

FOLDER = ROOT / "implementations" / "stacks" / "keras"


def test_keras_has_no_bench_stack_and_its_readme_says_it_declares_no_schedules():
    assert not (FOLDER / "bench.py").exists()
    assert "BenchEntry" not in (FOLDER / "manifest.py").read_text()
    section = (FOLDER / "README.md").read_text().split("## Schedules", 1)[1]
    assert "None declared" in section
