"""What a suite run found: a row per port (`PortReport`), the whole run (`SuiteReport`), and the
run's JSON (`to_json`, schema `SCHEMA`: docs/REPORT.md)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ..checking.properties import PROPERTIES
from ..jsonable import to_data
from . import machine, profiles
from .mutation import MutantResult, score
from .runner import Outcome

SCHEMA = 3  # the version of the JSON report (`to_json`); docs/REPORT.md
OUTPUT_LIMIT = 16384  # characters of a port's captured output kept in the report
#: A port the run stopped before it loaded (interrupted): neither conforming nor failed.
NOT_RUN = "not run"
#: Outcome and mutant statuses that mean something was checked (a skip or the canonical's
#: own reference checks nothing).
RAN = frozenset({"pass", "fail", "xfail", "xpass", "crashed", "timeout"})
MUTANT_RAN = frozenset({"killed", "survived", "crashed", "timeout"})
#: `SuiteReport.verdict`'s values.
VERDICTS = ("passed", "failed", "nothing checked", "interrupted")
#: The exit code of a run that checked nothing (pytest's for "no tests ran"): a CI job whose
#: framework did not install must not go green. `--allow-empty` makes it 0.
NOTHING_CHECKED_EXIT = 5


@dataclass
class PortReport:
    """One port's row: whether it loaded, its versions, an outcome per property, its output.

    `state` is "available", "unavailable", "broken", or "crashed" / "timed
    out" when its worker died or hung while loading it, or "not run" when the run was
    interrupted before it loaded. `not_run`: the properties asked for that have no outcome
    (the run was interrupted first).
    """

    name: str
    state: str = "available"
    reason: str = ""
    framework: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)  # device and matmul precision
    outcomes: list[Outcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    output: str = ""  # what the port printed (the end of it)
    seconds: float = 0.0
    not_run: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.state not in ("available", "unavailable", NOT_RUN) or any(
            o.failed for o in self.outcomes
        )


@dataclass
class SuiteReport:
    """Everything a run found, for the table and for `--json`."""

    profile: str
    max_examples: int | None
    scope: str
    canonical: str
    ports: list[PortReport]
    mutants: list[MutantResult] | None
    canonical_failure: str = ""  # set when the canonical port crashed
    timeout: float = 0.0
    seconds: float = 0.0
    interrupted: bool = False  # SIGINT or SIGTERM stopped it: it holds what finished
    mutants_not_run: list[str] = field(default_factory=list)  # interrupted before they ran

    def to_json(self) -> dict[str, Any]:
        """The data of `run --json` (its fields: docs/REPORT.md)."""
        return to_json(self)

    @property
    def failed(self) -> bool:
        not_killed = any(m.status not in ("killed", "unavailable") for m in self.mutants or [])
        return bool(self.canonical_failure) or not_killed or any(p.failed for p in self.ports)

    @property
    def checked(self) -> int:
        """How many checks ran: property outcomes that were checked, mutants hunted."""
        outcomes = sum(o.status in RAN for p in self.ports for o in p.outcomes)
        return outcomes + sum(m.status in MUTANT_RAN for m in self.mutants or [])

    @property
    def verdict(self) -> str:
        """One of `VERDICTS`: an interrupted run never passed, and one that checked nothing
        did not either."""
        if self.interrupted:
            return "interrupted"
        if self.failed:
            return "failed"
        return "passed" if self.checked else "nothing checked"


def replay_command(report: SuiteReport, port: str, prop: str, blob: str = "") -> str:
    """The command that runs one property of one port again (the failing example first)."""
    words = ["python", "-m", "conformance", "run", "--implementation", port]
    words += ["--property", prop, "--profile", report.profile, "--no-mutants"]
    if report.max_examples is not None:
        words += ["--examples", str(report.max_examples)]
    if report.timeout and report.timeout != profiles.TIMEOUTS.get(report.profile):
        words += ["--timeout", f"{report.timeout:g}"]  # a hang replays as one at the same limit
    if blob:
        words += ["--reproduce", blob]
    return shlex.join(words)


def to_json(report: SuiteReport) -> dict[str, Any]:
    """The report as plain data (its fields: docs/REPORT.md).

    `machine` is read here, in the parent process, which imports no framework;
    each port's device comes from its own worker (`devices.port_environment`).
    """
    data = {"kind": "run", "schema": SCHEMA, "machine": machine.describe(), **to_data(report)}
    data["failed"] = report.failed
    data["verdict"], data["checked"] = report.verdict, report.checked
    if report.mutants is not None:
        killed, total = score(report.mutants)
        data["mutation_score"] = {"killed": killed, "total": total}
    data["properties"] = {p.key: p.title for p in PROPERTIES}
    for port in data["ports"]:
        for outcome in port["outcomes"]:
            if outcome["status"] in ("fail", "crashed", "timeout"):
                blob = outcome["reproduce"]
                outcome["replay"] = replay_command(report, port["name"], outcome["property"], blob)
    return data
