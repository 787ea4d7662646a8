"""`python -m conformance list`: every registered port and whether it loads."""

from __future__ import annotations

import argparse

HELP = "list the registered ports and whether they load"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`list` takes no flags."""


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    import implementations

    from ..reporting.terminal_style import state_markup

    console = Console()
    for status in implementations.status():
        reason = f" — {status.reason}" if status.reason else ""
        console.print(f"{status.name:16} {state_markup(status.state)} ({status.source}){reason}")
    return 0
