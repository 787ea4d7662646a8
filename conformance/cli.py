"""`python -m conformance` (also installed as `remat-conformance`).

Commands:

- `run` (the default): every property on every available port, the
  side-by-side matrix, and the mutation score. Exits 1 if a port fails a
  property, a port is broken, or a mutant survives.
- `list`: the registered ports and whether they load.
- `vectors export PATH` / `vectors check --implementation NAME`: golden vectors.
- `compare`, `bench`: frameworks side by side (outputs, gradients, residuals,
  memory and time).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import environment, profiles

COMMANDS = ("run", "list", "vectors", "compare", "bench")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Check every port of the nn.checkpoint exercise against the canonical "
        "Flax linen port. With no command, runs the suite.",
    )
    commands = parser.add_subparsers(dest="command")

    run = commands.add_parser("run", help="run the suite (the default)")
    run.add_argument(
        "--profile",
        choices=profiles.PROFILES,
        default=None,
        help=f"Hypothesis profile (default: ${profiles.ENV_VAR} or {profiles.DEFAULT})",
    )
    run.add_argument(
        "--examples",
        type=int,
        default=None,
        metavar="N",
        help="examples per property per port (default: the profile's)",
    )
    run.add_argument(
        "--implementation",
        action="append",
        metavar="NAME",
        help="check only this port (repeatable)",
    )
    run.add_argument("--json", action="store_true", help="print a machine-readable report")
    run.add_argument("--no-mutants", action="store_true", help="skip the mutation run")
    run.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="worker processes (default: 2, or 1 on one core)",
    )
    run.add_argument(
        "--expectations",
        type=Path,
        default=None,
        metavar="DIR",
        help="read expected failures from DIR/<port>.txt",
    )

    commands.add_parser("list", help="list the registered ports and whether they load")

    vectors = commands.add_parser("vectors", help="golden vectors: export, or check a port")
    vector_commands = vectors.add_subparsers(dest="vectors_command", required=True)
    export = vector_commands.add_parser("export", help="write vectors from the canonical port")
    export.add_argument("path", type=Path, help="output file stem: PATH.npz and PATH.json")
    check = vector_commands.add_parser("check", help="check a port against vectors alone")
    check.add_argument("--implementation", required=True, metavar="NAME")
    check.add_argument(
        "--vectors",
        type=Path,
        default=None,
        metavar="PATH",
        help="the vectors' JSON manifest (default: the committed set)",
    )
    check.add_argument("--json", action="store_true")

    compare = commands.add_parser("compare", help="one table: outputs, gradients, residuals, time")
    compare.add_argument("--seed", type=int, default=0, help="default: 0")
    compare.add_argument("--dim", type=int, default=256, metavar="D", help="default: 256")
    compare.add_argument("--features", type=int, default=256, metavar="F", help="default: 256")
    compare.add_argument(
        "--implementation",
        action="append",
        metavar="NAME",
        help="compare only this port (repeatable; the canonical port is always the reference)",
    )
    compare.add_argument(
        "--repeats",
        type=int,
        default=9,
        metavar="N",
        help="interleaved samples per warm timing (default: 9)",
    )
    compare.add_argument(
        "--no-first-call",
        action="store_true",
        help="skip the first-call timing (a fresh process per port)",
    )
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")

    bench = commands.add_parser("bench", help="memory and time against depth, with a plot")
    bench.add_argument(
        "--out",
        type=Path,
        default=Path("bench-out"),
        help="output directory for bench.json, bench.md, bench.png (default: bench-out)",
    )
    bench.add_argument(
        "--depths",
        type=int,
        nargs="+",
        default=None,
        metavar="L",
        help="stack depths to sweep (default: 1 2 4 8 16 32)",
    )
    bench.add_argument("--batch", type=int, default=None, metavar="B", help="default: 1024")
    bench.add_argument("--features", type=int, default=None, metavar="F", help="default: 256")
    bench.add_argument(
        "--repeats",
        type=int,
        default=None,
        metavar="N",
        help="interleaved timing repeats per configuration (default: 11)",
    )
    bench.add_argument("--seed", type=int, default=None, help="seed of the data (default: 0)")
    bench.add_argument(
        "--framework",
        action="append",
        choices=("jax", "torch"),
        help="bench only this framework (repeatable; default: all installed)",
    )
    bench.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    return parser  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help")):
        argv.insert(0, "run")
    args = _parser().parse_args(argv)
    environment.prepare()
    if args.command == "run":
        return _run(args)
    if args.command == "list":
        return _list()
    if args.command == "vectors":
        from . import vectors

        return vectors.main(args)
    if args.command == "compare":
        from . import compare

        return compare.main(args)
    from . import bench

    return bench.main(args)


def _list() -> int:
    import implementations

    console = Console()
    for status in implementations.status():
        colour = {"available": "green", "unavailable": "yellow"}.get(status.state, "bold red")
        reason = f" — {status.reason}" if status.reason else ""
        console.print(f"{status.name:16} [{colour}]{status.state}[/] ({status.source}){reason}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from hypothesis import settings

    import implementations

    from .report import print_report, to_json
    from .suite import examples_per_property, run_suite

    profile = profiles.load(args.profile)
    names = args.implementation or list(implementations.registered())
    unknown = [n for n in names if n not in implementations.registered()]
    if unknown:
        known = ", ".join(implementations.registered())
        print(f"error: no port named {', '.join(unknown)}; registered: {known}", file=sys.stderr)
        return 2

    console = Console(stderr=args.json)
    from .mutants import MUTANTS
    from .properties import PROPERTIES

    examples = args.examples if args.examples is not None else settings().max_examples
    per_port = sum(examples_per_property(p, examples) for p in PROPERTIES)
    with Progress(
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        tasks = {name: bar.add_task(name, total=per_port) for name in names}
        if not args.no_mutants:
            tasks["mutants"] = bar.add_task("mutants", total=len(MUTANTS))

        def progress(task: str, kind: str, value) -> None:
            if kind == "advance" and task in tasks:
                bar.advance(tasks[task], value)

        report = run_suite(
            names,
            profile=profile,
            max_examples=examples,
            mutants=not args.no_mutants,
            jobs=args.jobs,
            expectations_dir=args.expectations,
            progress=progress,
        )
    if args.json:
        print(json.dumps(to_json(report), indent=2, default=str))
    else:
        print_report(report, console)
    return 1 if report.failed else 0
