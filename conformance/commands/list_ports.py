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
        for status in implementations.status():
            # A reason is text, not markup: an install hint keeps its "[extra]".
            reason = f" — {escape(status.reason)}" if status.reason else ""
            line = f"{status.name:16} {state_markup(status.state)} ({status.source}){reason}"
            console.print(line, highlight=False, soft_wrap=True)
        return 0
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
    print_legend(console, LEGEND)
    return 0


def _hint(name: str, found) -> str:
    """What installs a module found missing, as a run says it (`implementations.install_hint`)."""
    missing_module = found.state == "unavailable" and found.reason.endswith("not installed")
    return implementations.install_hint(name) if missing_module else ""
