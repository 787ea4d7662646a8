"""`python -m conformance list`: every registered port and whether its framework is there.

By default nothing is imported (`implementations.found`): a port whose
framework is on the path reads **found (not imported)**, with the versions
from the installed metadata. It is not called available, since a framework
can be installed and still fail to import; `--import` loads every port, as a
run does, and reports available, unavailable or broken.
"""

from __future__ import annotations

import argparse

import implementations
from implementations.found import find

from ..running import environment
from ..terminal import style as terminal_style
from ..terminal.progress import Steps
from ..terminal.style import print_legend, state_markup

HELP = "list the registered ports and whether their frameworks are installed"

LEGEND = (
    "found: every module the port needs is installed; not imported, so a framework that "
    "fails on import shows only with --import · unavailable: a module it needs is not "
    "installed (skipped by a run) · unknown: a port from another package, whose framework "
    "is known once it is imported · broken: it cannot load (a run fails it) · with --import: "
    "available (it loaded), unavailable, broken"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--import",
        dest="load",
        action="store_true",
        help="import every port, as a run does (slow: every framework), for the true state",
    )


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape

    console = terminal_style.console()
    for clash in implementations.name_clashes():
        environment.warn(clash)
    if args.load:
        names = list(implementations.registered())
        found = []
        # Every framework imported: a minute or more; a bar on a terminal, a line every 10 s
        # off one (on stderr, so that stdout holds the list alone).
        with Steps(terminal_style.console(stderr=True), "list --import", len(names)) as steps:
            for name in names:
                steps.update(0, f"importing {name}")
                found += implementations.status([name])
                steps.update(1)
        states = []
        for status in found:
            if status.elsewhere:  # not imported here: import it where it can be, then say
                status = imported_alone(status)
            # A reason is text, not markup: an install hint keeps its "[extra]".
            reason = f" — {escape(status.reason)}" if status.reason else ""
            line = f"{status.name:16} {state_markup(status.state)} ({status.source}){reason}"
            console.print(line, highlight=False, soft_wrap=True)
            states.append(status.state)
        console.print(verdict(states), highlight=False)
        return 0
    states = []
    for name, (target, source) in implementations.registered().items():
        found = find(name, target)
        if found.state == "found":
            versions = ", ".join(f"{m} {v}" for m, v in found.versions.items())
            detail = f"[green]found[/] (not imported) · {versions}"
        elif found.state in ("unavailable", "broken"):
            detail = f"{state_markup(found.state)} — {escape(found.reason + _hint(name, found))}"
        else:
            detail = f"[yellow]unknown[/] — {escape(found.reason)}"
        # One line per port, however long: soft_wrap leaves long lines to the reader.
        console.print(f"{name:16} {detail} ({source})", highlight=False, soft_wrap=True)
        states.append(found.state)
    print_legend(console, LEGEND)
    console.print(verdict(states), highlight=False)
    return 0


def verdict(states: list[str]) -> str:
    """The last line: how many ports, by state ("21 ports: 18 found, 3 unavailable")."""
    counts = {state: states.count(state) for state in dict.fromkeys(states)}
    said = ", ".join(f"{n} {state}" for state, n in counts.items())
    return f"{len(states)} ports: {said}" if states else "no port is registered"


#: A child that loads one port, as a run's worker would, and says its state on a line of its
#: own (a framework may print on import).
_LOAD_ALONE = (
    "import json, sys, implementations; "
    "(s,) = implementations.status([sys.argv[1]]); "
    "print('\\n' + _MARK + json.dumps([s.state, s.reason]))"
)
_MARK = "remat-conformance-status: "
LOAD_ALONE_TIMEOUT = 600.0  # seconds: one framework's import on a loaded machine


def imported_alone(status: implementations.PortStatus) -> implementations.PortStatus:
    """A port that cannot load beside the others here (its stack is held by another port's:
    Keras on another backend, Paddle after TensorFlow), loaded in a fresh process: its state
    is what that import showed, never "available" on its word."""
    import json
    import subprocess
    import sys
    from dataclasses import replace

    code = f"_MARK = {_MARK!r}; {_LOAD_ALONE}"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, status.name],
            capture_output=True,
            text=True,
            timeout=LOAD_ALONE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        reason = f"its import in a process of its own took over {LOAD_ALONE_TIMEOUT:g} s"
        return replace(status, state="broken", reason=reason, elsewhere=False)
    said = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
    if not said:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        reason = f"loading it in a process of its own failed: {last}"
        return replace(status, state="broken", reason=reason, elsewhere=False)
    state, reason = json.loads(said[-1][len(_MARK) :])
    if state == "available":
        reason = "loaded in a process of its own (it cannot load beside the other ports here)"
    return replace(status, state=state, reason=reason, elsewhere=False)


def _hint(name: str, found) -> str:
    """What installs a module found missing, as a run says it (`implementations.install_hint`)."""
    missing_module = found.state == "unavailable" and found.reason.endswith("not installed")
    return implementations.install_hint(name) if missing_module else ""
