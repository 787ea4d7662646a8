"""`run` (`run --json`): the suite's verdict table, ports by properties, each cell the
outcome's status and examples with the worst error/bound under it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.markup import escape

import implementations

from ...checking.properties import PROPERTIES
from ...jsonable import to_data
from ...running.mutation import MUTANT_EXAMPLES_NOTE
from ...running.profiles import SCALE
from ...running.results import NOT_RUN, RAN, VERDICTS, SuiteReport
from ...terminal import style
from ...terminal.suite import print_details, print_timing
from ..model import Cell, Column, Paragraph, Table, TableBuilder
from ..numbers import number, ratio, wall
from ..render import terminal as terminal_render
from . import outcomes

CAPTION = (
    "Under each port: its framework (the stack it runs on); self-reported: its evidence is "
    "the port's own word (a process port, or a Python port that overrides its records), not "
    "the suite's instrument (docs/PROTOCOL.md, the trust boundary). wall: the port's worker, "
    "start to finish (loading the framework and restarts included); the time line splits out "
    "the checking itself. not installed: the port's framework is not in this environment (the "
    "pip command under its name installs it): not a failure, counted apart."
)
#: What a terminal's matrix shows, said once under a run (the page and Markdown keep the
#: matrix's caption: `outcomes.LEGEND` and `CAPTION`, the same in more words).
TERMINAL_LEGEND = (
    "✓N: passed all N examples it ran (a smaller N: a fixed case list, or inputs ran out; "
    "never a partial pass); under it, the worst error/bound (1 fails). ✗fail, ✗crash, "
    "✗hang @N: failed at example N. ref: the canonical port. skip: not run here (why: "
    "above). xfail, xpass: as an expectations file expects, or not. ·: did not load. ○: not "
    "installed. Under each port: its framework; self-reported: its evidence is its own word "
    "(docs/PROTOCOL.md). wall: its worker, loading included."
)
STATE_MARKS = {"available": "pass", "unavailable": "not-installed"}
#: A port whose framework is missing: `run --json`'s state, in the words every output uses.
NOT_INSTALLED = "not installed"
#: A port an interrupted run checked on some of its properties only.
PARTLY_RUN = "partly run"
#: The details of a port's row: one line per property.
DETAIL_COLUMNS = (
    Column("property"),
    Column("verdict"),
    Column("examples", "right", "count"),
    Column("worst error/bound", "right", "error/bound"),
    Column("seconds", "right", "seconds"),
    Column("message, or why it was skipped", wrap=True),
    Column("replay", wrap=True),
)


def self_reported(port: dict[str, Any]) -> bool:
    """Whether a port's evidence is its own word (`checking.provenance`), from its report."""
    evidence = (port.get("environment") or {}).get("evidence") or {}
    return evidence.get("measured_by") == "port"


def not_installed(port: dict[str, Any]) -> bool:
    """Whether a port was left out because its framework is not installed (not a failure)."""
    return port.get("state") == "unavailable"


#: The command in a not-installed port's reason: "(pip install ...)", or "(cd CLONE && pip
#: install ...)" from a clone (`implementations.installing`); group 2 is the pip part.
_INSTALL = re.compile(r"\(((?:cd .+? && )?(pip install [^)]*))\)")


def install_command(port: dict[str, Any], *, pip_only: bool = False) -> str:
    """The install command in a not-installed port's reason (`pip_only`: without the clone's
    `cd CLONE && `), or the reason itself when it names none."""
    reason = port.get("reason", "")
    found = _INSTALL.search(reason)
    return found.group(2 if pip_only else 1) if found else reason


def _fill(worst: Any) -> float | None:
    value = number(worst)
    if value is None:
        return None
    return 1.0 if value != value else max(0.0, min(value, 1.0))


def _details(run: dict[str, Any], port: dict[str, Any], keys: list[str]) -> Table:
    """A port's row in full: each property's verdict, examples, worst case, time, message (or
    why it was skipped) and the command that replays a failure."""
    titles = run.get("properties") or {}
    by_key = {o["property"]: o for o in port["outcomes"]}
    failing = sum(o["status"] in outcomes.FAILING for o in port["outcomes"])
    framework = port.get("framework", "")
    not_run = port.get("not_run") or []
    said = f"{failing} ✗ failed" if failing else "every property passed"
    if not_run:  # an interrupted run's: never "every property passed"
        said = f"{said if failing else 'no ✗'}, {len(not_run)} not run (interrupted)"
    table = TableBuilder(
        f"{port['name']} ({framework}) · {said} · {wall(port.get('seconds'))} s", DETAIL_COLUMNS
    )
    for key in keys:
        found = by_key.get(key)
        if found is None:
            continue
        shown = outcomes.cell(found)
        message = (found.get("message") or "").strip()
        message = message if len(message) <= 1200 else message[:1200] + " …"
        table.add(
            [
                f"{outcomes.column(key)} {titles.get(key, key)}",
                Cell(outcomes.WORDS.get(found["status"], found["status"]), shown.mark),
                str(found.get("examples", "")),
                ratio(found.get("worst_ratio"), digits=2) or "-",
                f"{number(found.get('seconds')) or 0:.1f}",
                message,
                Cell(found.get("replay", ""), note=""),
            ],
            key=f"case-{port['name']}-{key}",
        )
    return table.build()


def matrix(run: dict[str, Any], registered: Sequence[str] | None = None) -> Table:
    """Ports as rows, properties as columns; narrow enough for an 80-column terminal. Each
    row holds its details (`_details`); a passing cell's bar is its worst error/bound; the
    line under it names the ports the run left out (`left_out`; `registered`: the registry's
    names, by default this environment's)."""
    keys = list(run.get("properties") or {})
    examples = run.get("max_examples")
    examples = "the profile's" if examples is None else examples
    table = TableBuilder(
        f"remat-conformance · profile {run.get('profile')} · {examples} examples per property",
        [
            Column("port"),
            # Too narrow a terminal leaves out the wall time (the time line has the
            # slowest), never a property's verdict.
            *(Column(outcomes.column(key), "center", drop=-1) for key in keys),
            Column("wall", "right", "seconds", drop=1),
        ],
        caption=f"{outcomes.names(keys)}. {outcomes.LEGEND} {CAPTION}",
        kind="matrix",
        note=left_out(run, registered),
    )
    for port in run["ports"]:
        state = port.get("state", "available")
        if not_installed(port):
            # The pip command under the name; from a clone, the clone it runs in (`cd CLONE &&`,
            # a path of this machine's that drew the row five lines tall on a phone) is its title.
            command, short = install_command(port), install_command(port, pip_only=True)
            title = command if short != command else ""
            label = Cell(port["name"], "not-installed", note=short, title=title)
            cells = [outcomes.NOT_INSTALLED_CELL] * len(keys)
            table.add([label, *cells, ""], key=port["name"])
            continue
        if state == NOT_RUN:
            label = Cell(port["name"], "muted", note=f"{NOT_RUN}: {port.get('reason', '')}")
            table.add([label, *[outcomes.NOT_RUN_CELL] * len(keys), ""], key=port["name"])
            continue
        if state != "available":
            label = Cell(port["name"], "fail", note=f"{state}: {port.get('reason', '')}")
            table.add([label, *[outcomes.NOT_LOADED] * len(keys), ""], key=port["name"])
            continue
        by_key = {o["property"]: o for o in port["outcomes"]}
        not_run = set(port.get("not_run") or ())
        note = port.get("framework", "") + ("\nself-reported" if self_reported(port) else "")
        cells = []
        for key in keys:
            found = by_key.get(key)
            shown = outcomes.NOT_RUN_CELL if key in not_run else outcomes.cell(found)
            if found is not None and found["status"] == "pass":
                shown = replace(shown, fill=_fill(found.get("worst_ratio")))
            cells.append(shown)
        seconds = f"{wall(port.get('seconds'))}s"
        table.add(
            [Cell(port["name"], note=note), *cells, seconds],
            key=port["name"],
            details=_details(run, port, keys),
        )
    return table.build()


def counts(run: dict[str, Any]) -> dict[str, int]:
    """Ports by what became of them: conform (every property asked ran, none failed),
    failed (a ✗, or did not load), partly run and not run (an interrupted run's), not
    installed. A port counts as conforming only on what ran."""
    found = {"conform": 0, "failed": 0, PARTLY_RUN: 0, NOT_RUN: 0, NOT_INSTALLED: 0}
    for port in run["ports"]:
        state = port.get("state", "available")
        if not_installed(port):
            found[NOT_INSTALLED] += 1
        elif state == NOT_RUN:
            found[NOT_RUN] += 1
        elif state != "available" or any(o["status"] in outcomes.FAILING for o in port["outcomes"]):
            found["failed"] += 1
        elif port.get("not_run"):
            found[PARTLY_RUN] += 1
        else:
            found["conform"] += 1
    return found


def verdict(run: dict[str, Any]) -> str:
    """The run's verdict (`SuiteReport.verdict`), from its JSON; a report written before the
    field is judged from `interrupted` and `failed` (and passed only if something ran)."""
    if run.get("verdict") in VERDICTS:
        return run["verdict"]
    if run.get("interrupted"):
        return "interrupted"
    if run.get("failed"):
        return "failed"
    ran = any(o.get("status") in RAN for p in run["ports"] for o in p.get("outcomes") or [])
    return "passed" if ran else "nothing checked"


def nothing_checked_reason(run: dict[str, Any]) -> str:
    """Why a run checked nothing, in a line: its ports were not installed, or no property ran."""
    ports = run["ports"]
    missing = [p["name"] for p in ports if not_installed(p)]
    if ports and len(missing) == len(ports):
        named = ", ".join(missing) if len(missing) <= 4 else f"all {len(missing)}"
        verb = "is" if len(missing) == 1 else "are"
        return f"{named} {verb} not installed"
    if not ports:
        return "no port was checked"
    return "no property ran on any port (each was skipped or is the canonical's own reference)"


def headline(run: dict[str, Any]) -> Paragraph:
    """The run's verdict in one line: "The run passed · 14 conform · 3 not installed". It
    counts only what ran: an interrupted run says what ran and what did not, and a run
    that checked nothing says why."""
    found, said = counts(run), verdict(run)
    words = {
        "passed": "The run passed",
        "failed": "The run failed",
        "interrupted": "The run was interrupted: partial results",
        "nothing checked": f"Nothing was checked: {nothing_checked_reason(run)}",
    }
    parts = [words[said]]
    if found["conform"] or said != "nothing checked":
        parts.append(f"{found['conform']} conform")
    if found["failed"]:
        parts.append(f"{found['failed']} with a ✗")
    for key in (PARTLY_RUN, NOT_RUN):
        if found[key]:
            parts.append(f"{found[key]} {key}")
    if found[NOT_INSTALLED]:
        parts.append(f"{found[NOT_INSTALLED]} {NOT_INSTALLED}")
    mutants_not_run = len(run.get("mutants_not_run") or ())
    if mutants_not_run:
        parts.append(f"{mutants_not_run} mutants not run")
    parts.append(f"{number(run.get('seconds')) or 0:.0f} s wall")
    parts.append(f"canonical port {run.get('canonical', '?')}")
    mark = {"passed": "pass", "failed": "fail"}.get(said, "warn")
    return Paragraph(" · ".join(parts), mark)


def left_out(run: dict[str, Any], registered: Sequence[str] | None = None) -> str:
    """One line naming the registered ports this run did not check, and the command that
    checks them: the sharded ones (`--profile scale`), and the ones the profile or the
    command left out. `registered`: the registry's names (default: this environment's)."""
    names = list(implementations.registered()) if registered is None else list(registered)
    ran = {port["name"] for port in run["ports"]}
    missing = [name for name in names if name not in ran]
    if not missing:
        return ""
    sharded = [n for n in missing if n in implementations.SHARDED]
    other = [n for n in missing if n not in implementations.SHARDED]
    parts = []
    if sharded:
        parts.append(
            f"sharded ports {', '.join(sharded)} (the scale profile runs them: "
            "python -m conformance --profile scale)"
        )
    if other and run.get("profile") == SCALE:
        flags = " ".join(f"--implementation {n}" for n in other)
        parts.append(
            f"{', '.join(other)} (the scale profile runs the sharded ports only: "
            f"python -m conformance {flags})"
        )
    elif other:  # the run named its ports: the rest are one plain run away
        parts.append(f"{len(other)} more not named (python -m conformance runs every port)")
    return "Not in this run: " + "; ".join(parts) + "."


def mutants(run: dict[str, Any]) -> Table | None:
    """One row per mutant: its verdict, the property that rejected it, its bug (and, under
    it, how it was caught or why it could not run); None without a mutation run."""
    found = run.get("mutants")
    if found is None:
        return None
    counted = [m for m in found if m["status"] != "unavailable"]
    killed = sum(m["status"] == "killed" for m in counted)
    # No score where no mutant could run: "0/0 killed" would read as a result.
    score_line = f"{killed}/{len(counted)} killed" if counted else "none could run"
    table = TableBuilder(
        f"Mutation score: {score_line}",
        [Column("mutant"), Column("verdict"), Column("killed by"), Column("bug", wrap=True)],
        caption=f"A mutant is a deliberately broken port ({MUTANT_EXAMPLES_NOTE}): ✓ killed, a "
        "property rejected it; · unavailable, its port did not load (not run, not counted); "
        "✗ survived, crashed or timed out",
        kind="mutants",
        collapsed=bool(found) and all(m["status"] == "killed" for m in found),
    )
    for m in found:
        status = m["status"]
        if status == "killed":
            verdict = Cell("✓ killed", "pass")
        elif status == "unavailable":
            verdict = Cell("· unavailable", "unavailable")
        else:
            verdict = Cell(f"✗ {status}", "fail")
        how = (m.get("message", "").splitlines() or [""])[0].removeprefix(f"[{m['name']}] ")
        bug = Cell(m.get("bug", ""), note=how)
        table.add([m["name"], verdict, m.get("killed_by", ""), bug], key=m["name"])
    return table.build()


def _named_killer(name: str) -> str:
    """The property a mutant's stack names to reject it ("" when it names none)."""
    from ...mutants import MUTANTS  # the registry reads every manifest: only when printing

    spec = MUTANTS.get(name)
    return spec.killed_by if spec is not None else ""


def _worth_a_row(mutant: dict[str, Any]) -> bool:
    """Whether a terminal lists a mutant: one not killed (survived, crashed, timed out), or
    killed by another property than the one its stack names. The others (killed as named,
    or unavailable: not run) are counted in the mutants' line (`mutant_line`)."""
    if mutant["status"] == "unavailable":
        return False
    if mutant["status"] != "killed":
        return True
    named = _named_killer(mutant["name"])
    return bool(named) and mutant.get("killed_by") != named


def mutant_line(run: dict[str, Any]) -> Paragraph | None:
    """The mutation run in one line ("Mutants: 61/61 killed, each by the property its stack
    names"); None without a mutation run."""
    found = run.get("mutants")
    if found is None:
        return None
    counted = [m for m in found if m["status"] != "unavailable"]
    killed = sum(m["status"] == "killed" for m in counted)
    listed = sum(_worth_a_row(m) for m in found)
    # Said only when true of each: a mutant from outside the registry names no property.
    named = all(_named_killer(m["name"]) for m in counted)
    text = f"Mutants: {killed}/{len(counted)} killed"
    if not counted:  # no score where no mutant could run: "0/0 killed" would read as a result
        text = "Mutants: none could run"
    elif listed:
        text += f"; {listed} in the table above (not killed, or not by the property named)"
    elif named:
        text += ", each by the property its stack names"
    unavailable = sum(m["status"] == "unavailable" for m in found)
    if unavailable:
        text += f" · {unavailable} not run (their port did not load)"
    return Paragraph(text, "pass" if killed == len(counted) else "fail")


def mutants_to_read(run: dict[str, Any]) -> Table | None:
    """The mutants' table as a terminal shows it: only the rows `_worth_a_row` picks (a
    mutant killed by another property says which one its stack names); None if none."""
    found = mutants(run)
    if found is None:
        return None
    by_name = {m["name"]: m for m in run["mutants"]}
    rows = []
    for row in found.rows:
        mutant = by_name[row.key]
        if not _worth_a_row(mutant):
            continue
        if mutant["status"] == "killed":
            said = Cell(
                f"{mutant.get('killed_by', '')}",
                "fail",
                note=f"its stack names {_named_killer(mutant['name'])}",
            )
            row = replace(row, cells=(*row.cells[:2], said, *row.cells[3:]))
        rows.append(row)
    if not rows:
        return None
    return replace(found, title="Mutants to read", rows=tuple(rows), collapsed=False)


def _data(report: SuiteReport) -> dict[str, Any]:
    return {**to_data(report), "properties": {p.key: p.title for p in PROPERTIES}}


def print_mutants(report: SuiteReport, console: Console) -> None:
    """The mutants worth reading (`mutants_to_read`), then the mutants' line."""
    data = _data(report)
    found = mutants_to_read(data)
    if found is not None:
        terminal_render.print_block(console, replace(found, caption=""))
    line = mutant_line(data)
    if line is not None:
        terminal_render.print_paragraph(console, line)


def legend(run: dict[str, Any]) -> str:
    """What the run's tables show, said once: the matrix's symbols, and the mutants' when
    the mutants' table is shown."""
    found = f"{outcomes.names(run.get('properties') or {})}. {TERMINAL_LEGEND}"
    listed = mutants_to_read(run)
    return f"{found} Mutants: {listed.caption}." if listed is not None else found


def terminal_matrix(run: dict[str, Any]) -> tuple[Table, str]:
    """The matrix as a terminal shows it: a not-installed port's row on one line, and one
    line under the table with every such port's pip command (the page keeps each command
    under its port's name: `matrix`); "" when every port is installed."""
    table = matrix(run)
    missing = {p["name"]: install_command(p) for p in run["ports"] if not_installed(p)}
    rows = tuple(
        replace(row, cells=(replace(row.cells[0], note=""), *row.cells[1:]))
        if row.key in missing and not row.heading
        else row
        for row in table.rows
    )
    commands: dict[str, list[str]] = {}
    for name, command in missing.items():
        commands.setdefault(command, []).append(name)
    said = "; ".join(f"{', '.join(names)} ({command})" for command, names in commands.items())
    line = f"Not installed (○, not a failure): {said}." if missing else ""
    return replace(table, rows=rows, caption=""), line


def print_report(report: SuiteReport, console: Console, show_legend: bool = True) -> None:
    """The whole human-readable report, its verdict last (as pytest's summary is): the
    matrix and what it left out, the details, the mutants, the legend (once: `show_legend`,
    left out of a replay), the time, then the verdict."""
    data = _data(report)
    table, missing = terminal_matrix(data)
    if missing:
        table = replace(table, note=" ".join(filter(None, [table.note, missing])))
    terminal_render.print_block(console, table)
    print_details(report, console)
    print_mutants(report, console)
    if show_legend:
        style.print_legend(console, escape(legend(data)))
    print_timing(report, console)
    terminal_render.print_verdict(
        console, headline({**data, "failed": report.failed, "verdict": report.verdict})
    )
