"""The run's verdict counts only what ran (issue 76, item 1): an interrupted run never says
"passed", a port it never loaded is "not run" (never "available"), and a run that checked
nothing exits 5 with its reason, unless `--allow-empty`."""

from __future__ import annotations

import json
import signal
import sys

from rich.console import Console

import implementations
from conformance import cli
from conformance.mutants import MUTANTS
from conformance.running import suite
from conformance.running.config import run_config
from conformance.running.runner import Outcome
from conformance.running.worker import PortInfo
from conformance.tables.kinds import run as run_tables
from tests.support.helpers import ROOT, without_frameworks

PORTS = ["flax_linen", "pytorch", "deepspeed"]


def _interrupted_run(monkeypatch, feed) -> dict:
    """`run_suite` on PORTS, its supervisor interrupted once `feed(supervisor)` has handed it
    the messages its workers sent before the signal; the report's JSON."""

    def interrupted(self) -> None:
        feed(self)
        self.interrupted = signal.SIGINT

    monkeypatch.setattr(suite.Supervisor, "run", interrupted)
    config = run_config(PORTS, profile="dev", mutants=False)
    return suite.run_suite(config)


def _item(supervisor, name: str):
    return next(item for job in supervisor.runs for item in job.items if item.port == name)


def test_an_interrupt_before_any_port_loaded_says_nothing_passed(monkeypatch):
    report = _interrupted_run(monkeypatch, lambda supervisor: None)
    data = report.to_json()
    assert [port["state"] for port in data["ports"]] == ["not run"] * 3
    assert all(port["not_run"] for port in data["ports"])  # each property asked, unrun
    assert data["verdict"] == "interrupted"
    assert data["checked"] == 0
    line = run_tables.headline(data).text
    assert "passed" not in line
    assert "0 conform" in line
    assert "3 not run" in line
    assert "interrupted" in line
    console = Console(record=True, width=200, color_system=None)
    run_tables.print_report(report, console)
    printed = console.export_text()
    assert "The run passed" not in printed
    # Each row says it under its name; no list of them repeats it below the matrix.
    assert printed.count("the run was interrupted before this port loaded") == 3


def test_an_interrupted_run_counts_what_ran_and_what_did_not(monkeypatch):
    def feed(supervisor) -> None:
        canonical = _item(supervisor, "flax_linen")
        supervisor.handle(canonical, ("loaded", PortInfo("available", "", "flax")))
        supervisor.handle(canonical, ("outcome", Outcome("flax_linen", "b_forward", "pass", 3)))
        missing = _item(supervisor, "pytorch")
        reason = "needs 'torch', not installed"
        supervisor.handle(missing, ("loaded", PortInfo("unavailable", reason)))

    data = _interrupted_run(monkeypatch, feed).to_json()
    ports = {port["name"]: port for port in data["ports"]}
    assert ports["flax_linen"]["state"] == "available"
    assert "b_forward" not in ports["flax_linen"]["not_run"]
    assert "c_vjp" in ports["flax_linen"]["not_run"]
    assert ports["pytorch"]["state"] == "unavailable"  # said as not installed, not conforming
    assert ports["deepspeed"]["state"] == "not run"
    assert data["checked"] == 1
    found = run_tables.counts(data)
    assert found == {"conform": 0, "failed": 0, "partly run": 1, "not run": 1, "not installed": 1}
    line = run_tables.headline(data).text
    assert line.startswith("The run was interrupted")
    assert "passed" not in line
    shown = run_tables.matrix(data, registered=PORTS)
    row = next(r for r in shown.rows if r.key == "flax_linen")
    column = 1 + list(data["properties"]).index("c_vjp")
    assert row.cells[column].text == "—"  # not run, never an empty cell that reads as nothing
    assert "every property passed" not in row.details.title
    assert "not run (interrupted)" in row.details.title


def _run_cli(tmp_path, monkeypatch, capfd, *extra: str) -> tuple[int, str, str]:
    env = without_frameworks(tmp_path, ["deepspeed"])
    monkeypatch.syspath_prepend(str(tmp_path))  # the in-process load meets the shadow too
    # Where DeepSpeed is installed and another test of this process imported it (or its
    # port), the import must run again and meet the shadow.
    for module in [m for m in sys.modules if m.split(".")[0] == "deepspeed"]:
        monkeypatch.delitem(sys.modules, module)
    for module in [m for m in sys.modules if m.startswith("implementations.stacks.deepspeed")]:
        monkeypatch.delitem(sys.modules, module)
    implementations.load.cache_clear()  # a load that fails is not cached: nothing to undo
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    monkeypatch.setenv("REMAT_CACHE", "off")
    argv = ["--implementation", "deepspeed", "--in-process", "--profile", "dev", *extra]
    code = cli.main(argv)
    captured = capfd.readouterr()
    return code, captured.out, captured.err


def test_a_run_whose_every_port_is_not_installed_exits_5_with_its_reason(
    tmp_path, monkeypatch, capfd
):
    code, out, err = _run_cli(tmp_path, monkeypatch, capfd, "--json")
    assert code == 5  # pytest's "no tests ran"
    data = json.loads(out)
    assert data["verdict"] == "nothing checked"
    assert data["failed"] is False
    (port,) = data["ports"]
    assert port["state"] == "unavailable"
    # Every mutant of its family is said unavailable (the loop that said so skipped every
    # other one), none left as not run.
    family = [name for name, spec in MUTANTS.items() if spec.family == "deepspeed"]
    assert len(family) >= 2
    assert [m["name"] for m in data["mutants"]] == family
    assert {m["status"] for m in data["mutants"]} == {"unavailable"}
    assert data["mutants_not_run"] == []
    assert "nothing was checked: deepspeed is not installed (exit 5)" in err


def test_allow_empty_opts_out_and_the_text_never_says_passed(tmp_path, monkeypatch, capfd):
    code, out, _ = _run_cli(tmp_path, monkeypatch, capfd, "--allow-empty")
    assert code == 0
    assert "The run passed" not in out
    assert "0/0" not in out  # no mutant could run: no score, said so
    assert "Mutants: none could run" in out
    assert "Nothing was checked: deepspeed is not installed" in " ".join(out.split())


def test_the_readme_says_the_exit_code():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "5 nothing was checked" in readme
    assert "--allow-empty" in readme


def test_merge_never_calls_a_report_that_checked_nothing_passed(tmp_path, monkeypatch, capfd):
    from conformance import merge

    code, out, _ = _run_cli(tmp_path, monkeypatch, capfd, "--json", "--no-mutants")
    assert code == 5
    merged = merge.to_json(merge.combine([merge.Source(1, "run.json", json.loads(out))]))
    (report,) = merged["reports"]
    assert report["verdict"] == "nothing checked"
    text = merge.markdown(merge.combine([merge.Source(1, "run.json", json.loads(out))]))
    (line,) = [line for line in text.splitlines() if "#1 run.json (" in line]
    assert line.endswith(": nothing checked"), line  # was ": passed"
