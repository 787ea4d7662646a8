"""Long commands show progress (issue 60, item 4), in the CLI and the Python API: off a
terminal a line every few seconds on stderr, counted here against a fake clock, never by
sleeping; on a terminal a rich progress bar."""

from __future__ import annotations

import io
import sys

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
        for step in range(22):
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
    assert "bench: 10/12 · jax L=9" in err


def test_off_a_terminal_a_long_step_still_gets_a_line_every_ten_seconds(plain):
    """A step that runs for minutes (one framework's sweep) is not silent: the heartbeat
    (`tick`, a thread's call every ten seconds) prints a line though no update came."""
    out = io.StringIO()
    clock = Clock()
    with progress.Steps(style.console(file=out), "bench --schedules", 40, clock=clock,
                        heartbeat=False) as steps:  # fmt: skip
        assert progress.EVERY_SECONDS == 10.0
        steps.update(0, "jax L=64 nested(8,8)")
        assert out.getvalue() == ""
        clock.now += 9.0  # 11 s since the start: the next call reads 12
        steps.tick()
        assert out.getvalue() == "bench --schedules: 0/40 · jax L=64 nested(8,8) · 11 s\n"
        steps.tick()  # a second later: no second line
        assert len(out.getvalue().splitlines()) == 1


def test_off_a_terminal_the_heartbeat_runs_in_a_thread_that_stops_with_the_steps(plain):
    with progress.Steps(style.console(file=io.StringIO()), "run", 3) as steps:
        assert steps._thread is not None
        assert steps._thread.is_alive()
    assert not steps._thread.is_alive()
    on_a_terminal = Console(file=io.StringIO(), force_terminal=True)
    with progress.Steps(on_a_terminal, "run", 3) as steps:
        assert steps._thread is None  # the bar draws itself


def test_a_count_never_passes_its_total(plain):
    out = io.StringIO()
    with progress.Steps(style.console(file=out), "bench", 324, every=0.0, heartbeat=False) as steps:
        steps.update(1500, "L=32 timing, more repeats")
    (line,) = out.getvalue().splitlines()
    assert line.startswith("bench: 1500/1500 · ")
    console = Console(file=io.StringIO(), force_terminal=True)
    with progress.Steps(console, "bench", 324) as steps:
        steps.update(1500)
        task = steps._bar.tasks[0]
        assert task.completed <= task.total


class _Case:
    framework = "fake"

    def step(self) -> None:
        pass

    def measure(self) -> None:
        return None


class _Stack:
    """A framework module of two configurations whose timing never settles."""

    @staticmethod
    def configurations():
        return [("v", "none"), ("v", "full")]

    @staticmethod
    def build(variant, mode, data):
        return _Case()


@pytest.mark.parametrize("settles", [False, True])
def test_the_depth_sweep_counts_to_its_total_exactly(monkeypatch, settles):
    """The depth bench's extra timing rounds were counted past the total ("1500/324")."""
    from types import SimpleNamespace

    from conformance import benchmark
    from conformance.benchmark.measure import Settings

    def interleaved(calls, repeats, on_sample, seed):
        for _ in range(repeats * len(calls)):
            on_sample()
        return [[0.01] * repeats for _ in calls]

    spread = 0.0 if settles else 1.0
    monkeypatch.setattr(benchmark.measure, "make_data", lambda settings, depth: None)
    monkeypatch.setattr(benchmark.measure, "label", lambda *parts: "fake")
    monkeypatch.setattr(
        benchmark.measure, "result_of", lambda *args: SimpleNamespace(time_ratios=[1.0])
    )
    monkeypatch.setattr(
        benchmark.measure,
        "attach_timings",
        lambda results, samples: [setattr(r, "time_ratio_spread", spread) for r in results],
    )
    monkeypatch.setattr(benchmark.timing, "time_interleaved", interleaved)
    settings = Settings(depths=(1, 2, 4), repeats=3, max_repeats=10)
    frameworks = {"fake": _Stack}
    counted = []
    benchmark.run(settings, frameworks, progress=lambda text, advance: counted.append(advance))
    total = benchmark.total_steps(settings, frameworks)
    assert total == 3 * 2 * (1 + 9)  # three rounds of three samples fit within ten
    running = [sum(counted[: i + 1]) for i in range(len(counted))]
    assert max(running) == running[-1] == total


def test_a_run_off_a_terminal_prints_a_line_every_ten_seconds_on_stderr(plain, monkeypatch, capfd):
    """A run printed nothing off a terminal until its report, minutes later."""
    from conformance import cli
    from conformance.commands import run as run_command
    from conformance.running.results import SuiteReport

    def suite(config, progress):
        for _ in range(25):
            progress("jax_checkpoint", "advance", 1)
        return SuiteReport("dev", 20, "menu", "flax_linen", [], None)

    monkeypatch.setattr(run_command, "run_suite", suite)
    argv = ["run", "--implementation", "jax_checkpoint", "--profile", "dev", "--no-mutants"]
    args = cli.parser().parse_args(argv)
    run_command.validate(args)
    run_command.run(args)
    out, err = capfd.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("run: ")]
    assert [line.split("/")[0] for line in lines] == ["run: 10", "run: 20"], err
    assert not any(line.startswith("run: ") for line in out.splitlines())  # the report alone


def test_a_version_sweep_off_a_terminal_names_its_step_every_ten_seconds(plain, capsys):
    """A pip install in a version set said nothing for minutes off a terminal."""
    from conformance.commands import versions as versions_command

    out = io.StringIO()
    with versions_command._progress(style.console(file=out)) as said:
        said(1, 3, "jax 0.7.0", "installing · pip's own words")
        for _ in range(12):  # the heartbeat's calls, a second apart on the fake clock
            said.steps.tick()
    assert out.getvalue().splitlines() == ["versions: · [1/3] jax 0.7.0: installing · 10 s"]
    assert "versions: [1/3] jax 0.7.0: installing" in capsys.readouterr().err


def test_vectors_and_list_import_show_progress(plain, monkeypatch, capsys):
    """They load frameworks for seconds to minutes: each shows `Steps` on stderr."""
    import argparse

    import implementations
    from conformance.commands import list_ports
    from conformance.commands import vectors as vectors_command

    made = []

    def recorded(console, title, total=None, **options):
        made.append((title, total, console.file))
        return progress.Steps(console, title, total, heartbeat=False, **options)

    def unavailable(name):
        raise implementations.PortUnavailable(name, "not installed here", missing=True)

    for module in (vectors_command, list_ports):
        monkeypatch.setattr(module, "Steps", recorded)
    monkeypatch.setattr(implementations, "load", unavailable)
    args = argparse.Namespace(
        vectors_command="check", implementation=["pytorch"], vectors=None, json=False
    )
    assert vectors_command.run(args) == 2
    monkeypatch.setattr(implementations, "status", lambda names: [])
    assert list_ports.run(argparse.Namespace(load=True)) == 0
    assert [(title, total) for title, total, _ in made] == [
        ("vectors check", None),
        ("list --import", len(implementations.registered())),
    ]
    assert all(file is sys.stderr for _, _, file in made)
