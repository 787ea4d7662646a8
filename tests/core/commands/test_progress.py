"""Long commands show progress (issue 60, item 4), in the CLI and the Python API: off a
terminal a line every few seconds on stderr, counted here against a fake clock, never by
sleeping; on a terminal a rich progress bar."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from conformance import api
from conformance.terminal import progress, style


class Clock:
    """Seconds that pass only when told: one per call."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def plain(monkeypatch):
    monkeypatch.setattr(style, "OPTIONS", style.OutputOptions())
    monkeypatch.setattr(progress.time, "monotonic", Clock())


def test_off_a_terminal_one_line_every_few_seconds(plain):
    out = io.StringIO()
    with progress.Steps(style.console(file=out), "bench", 20, every=5.0) as steps:
        for step in range(20):
            steps.update(1, f"jax L={step}")
    lines = out.getvalue().splitlines()
    assert len(lines) == 20 // 5  # a second per update: a line at every fifth
    assert lines[0].startswith("bench: 5/20 · jax L=4 · ")
    assert lines[-1].startswith("bench: 20/20 · jax L=19 · ")


def test_on_a_terminal_a_progress_bar(plain):
    console = Console(file=io.StringIO(), force_terminal=True)
    with progress.Steps(console, "bench", 3) as steps:
        assert steps._bar is not None
        steps.update(1, "jax")
    assert not console.file.getvalue().count("\n") > 3  # transient: drawn, then gone


def test_the_apis_compare_shows_progress_on_stderr(plain, monkeypatch, capsys):
    def run(*args, progress, **kwargs):
        for step in range(12):
            progress(f"timing port {step}")
        return "the comparison"

    monkeypatch.setattr(api.measure, "run", run)
    assert api.compare() == "the comparison"
    out, err = capsys.readouterr()
    assert out == ""
    assert "compare: · timing port " in err
    assert len(err.splitlines()) >= 2
    api.compare(progress=False)
    assert capsys.readouterr() == ("", "")


def test_the_apis_bench_shows_progress_on_stderr(plain, monkeypatch, capsys):
    def run(settings, loaded, progress=None):
        for step in range(12):
            progress(f"jax L={step}", 1)
        return []

    monkeypatch.setattr(api, "load_frameworks", lambda names: ({}, {}))
    monkeypatch.setattr(api.sweep, "run", run)
    monkeypatch.setattr(api.sweep, "total_steps", lambda settings, loaded: 12)
    api.bench()
    out, err = capsys.readouterr()
    assert out == ""
    assert "bench: 5/12 · jax L=4" in err
