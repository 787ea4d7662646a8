"""A run's terminal report as a newcomer reads it (issue 76): the verdict last, at most 60
lines for a passing default run at 100 columns, the passing mutants in one line, the legend
once (and not under a replay).

Rendered from a recorded run (tests/data/report/run-all.json), made into a default run: the
19 ports a plain `python -m conformance` checks, the engines not installed."""

from __future__ import annotations

import copy
import io
import json

import pytest

from conformance.checking.properties import PROPERTIES
from conformance.running.mutation import MutantResult
from conformance.running.results import PortReport, SuiteReport
from conformance.running.runner import DID_NOT_REPRODUCE, Outcome
from conformance.tables.kinds import run as run_tables
from conformance.terminal import style
from tests.support.helpers import ROOT

DATA = ROOT / "tests" / "data" / "report"
ENGINES = {"paddle": "paddle", "mindspore": "mindspore", "deepspeed": "deepspeed"}
#: The ports a default run checks that the recording lacks, recorded as pytorch's row.
LATER_PORTS = ("torch_ac_wrapper", "hf_transformers")
#: The ports whose (k) a real default run skips, saying why at length.
SKIPPING = ("tfjs", "torch_compile")


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


@pytest.fixture(autouse=True)
def default_output():
    style.configure()
    yield
    style.configure()


def recorded_run() -> SuiteReport:
    """The recorded run as a default run of the quick-start venv (`[all]`) would report it."""
    data = json.loads((DATA / "run-all.json").read_text())
    ports = {p["name"]: p for p in data["ports"]}
    for name in LATER_PORTS:
        ports[name] = {**copy.deepcopy(ports["pytorch"]), "name": name}
    found = []
    for port in ports.values():
        outcomes = [
            Outcome(**{k: v for k, v in o.items() if k != "replay"}) for o in port["outcomes"]
        ]
        if port["name"] in ENGINES:
            why = f"needs {port['name']!r}, not installed (pip install -e '.[{port['name']}]')"
            found.append(PortReport(port["name"], "unavailable", why))
            continue
        if port["name"] in SKIPPING:  # as a real run says why (k) cannot run there
            why = f"not expressible: twice: {port['name']} flattens a region inside another " * 4
            outcomes.append(Outcome(port["name"], "k_composition", "skip", message=why))
        found.append(PortReport(**{**port, "outcomes": outcomes}))
    mutants = [MutantResult(**m) for m in data["mutants"]]
    fields = ("profile", "max_examples", "scope", "canonical", "timeout", "seconds")
    return SuiteReport(ports=found, mutants=mutants, **{k: data[k] for k in fields})


def printed(report: SuiteReport, width: int = 100, **options) -> list[str]:
    """The report's lines as a terminal of `width` columns shows them (a long line takes
    as many rows as it wraps to)."""
    style.configure(width=width)
    out = Pipe()
    run_tables.print_report(report, style.console(file=out), **options)
    return out.getvalue().splitlines()


def rows_on_screen(lines: list[str], width: int) -> int:
    return sum(max(1, -(-len(line) // width)) for line in lines)


def test_a_passing_default_run_prints_at_most_60_rows_at_100_columns_its_verdict_last():
    report = recorded_run()
    assert len(report.ports) == 19
    assert not report.failed
    lines = printed(report)
    assert rows_on_screen(lines, 100) <= 60, "\n".join(lines)
    assert lines[-1].startswith("The run passed · 16 conform · 3 not installed"), lines[-1]
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    skipped = [line for line in lines if line.startswith("skipped ")]
    assert [line.split()[1] for line in skipped] == list(SKIPPING)  # one line each, cut


def test_passing_mutants_are_one_line_and_only_the_others_get_rows():
    report = recorded_run()
    killed = len(report.mutants)
    text = "\n".join(printed(report))
    assert f"Mutants: {killed}/{killed} killed, each by the property its stack names" in text
    assert not any(m.name in text for m in report.mutants)  # no row for a killed mutant
    report.mutants[0].status, report.mutants[0].killed_by = "survived", ""
    report.mutants[1].killed_by = "h_hygiene"  # killed, but not by the property named
    report.mutants.append(MutantResult("gone", "a bug", "unavailable", message="no port"))
    lines = printed(report)
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)  # the table was 109
    text = "\n".join(lines)
    flat = " ".join(text.split())
    assert f"Mutants: {killed - 1}/{killed} killed; 2 in the table above" in flat
    assert "1 not run (their port did not load)" in flat
    rows = [line.split()[0] for line in text.splitlines() if line.split()[:1]]
    assert report.mutants[0].name in rows
    assert report.mutants[1].name in rows
    assert not any(m.name in rows for m in report.mutants[2:])
    assert "✗ survived" in text
    assert "its stack names" in text  # the mutant killed by another property says which
    assert text.splitlines()[-1].startswith("The run failed")


def test_the_legend_prints_once_and_a_replay_leaves_it_out():
    report = recorded_run()
    start = "ref: the canonical port"
    assert "\n".join(printed(report)).count(start) == 1
    report.ports = [report.ports[1]]
    outcome = report.ports[0].outcomes[2]
    outcome.message = f"{DID_NOT_REPRODUCE}: it passes now"
    replay = printed(report, show_legend=False)
    assert not any(start in line for line in replay)
    assert f"{report.ports[0].name} · {outcome.property}: {DID_NOT_REPRODUCE}" in "\n".join(replay)
    assert replay[-1].startswith("The run passed")


def test_at_80_columns_the_matrix_leaves_out_the_wall_time_says_so_and_keeps_every_verdict():
    report = recorded_run()
    lines = printed(report, width=80)
    # The verdict is one line however narrow (the terminal wraps it on screen).
    assert lines[-1].startswith("The run passed · ")
    assert lines[-1].endswith("canonical port flax_linen")
    assert max(len(line) for line in lines[:-1]) <= 80, max(lines[:-1], key=len)
    text = "\n".join(lines)
    assert "left out to fit 80 columns: wall (--width " in text
    header = next(line for line in lines if line.startswith("port "))
    assert header.split()[1:] == [f"({p.id})" for p in PROPERTIES]


@pytest.mark.parametrize(
    ("flags", "shown"), [([], True), (["--reproduce"], False), (["--reproduce", "--legend"], True)]
)
def test_the_command_prints_the_legend_unless_replaying_and_on_legend(
    monkeypatch, capfd, flags, shown
):
    import hypothesis
    from hypothesis.core import encode_failure

    from conformance import cli
    from conformance.commands import run as run_command

    report = recorded_run()
    report.mutants = None
    monkeypatch.setattr(run_command, "run_suite", lambda config, progress: report)
    monkeypatch.setenv("COLUMNS", "100")
    if "--reproduce" in flags:
        blob = f"{hypothesis.__version__}:{encode_failure([b'x']).decode()}"
        flags = [blob if f == "--reproduce" else f for f in flags]
        flags.insert(flags.index(blob), "--reproduce")
    argv = ["run", "--implementation", "pytorch", "--property", "c", *flags]
    args = cli.parser().parse_args(argv)
    run_command.validate(args)
    run_command.run(args)
    out = capfd.readouterr().out
    assert ("ref: the canonical port" in out) is shown
    assert out.splitlines()[-1].startswith("The run passed")
