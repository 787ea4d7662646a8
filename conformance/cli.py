"""`python -m conformance` (also installed as `remat-conformance`).

Commands (each in `conformance.commands`, which owns its flags):

- `run` (the default): every property on every available port, the
  side-by-side matrix, and the mutation score.
- `list`: the registered ports and whether they load.
- `vectors export PATH` / `vectors check --implementation NAME`: golden vectors.
- `compare`, `bench`: frameworks side by side (outputs, gradients, residuals,
  memory and time).
- `merge REPORT.json ...`: many runs' `--json` reports (one per CI job) as
  one matrix, grouped by machine and device; Markdown and JSON too.

Exit codes: 0 success, 1 a check failed, 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys

from .commands import bench, compare, list_ports, merge, run, vectors
from .running import environment

COMMANDS = {
    "run": run,
    "list": list_ports,
    "vectors": vectors,
    "compare": compare,
    "bench": bench,
    "merge": merge,
}


def parser() -> argparse.ArgumentParser:
    """The whole command line: one subcommand per module of `conformance.commands`."""
    top = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Check every port of the nn.checkpoint exercise against the canonical "
        "Flax linen port. With no command, runs the suite.",
    )
    commands = top.add_subparsers(dest="command")
    for name, module in COMMANDS.items():
        module.add_arguments(
            commands.add_parser(name, help=module.HELP, description=module.__doc__)
        )
    return top


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help")):
        argv.insert(0, "run")
    args = parser().parse_args(argv)
    environment.prepare()
    return COMMANDS[args.command].run(args)
