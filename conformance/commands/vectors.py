"""`python -m conformance vectors`: write golden vectors, or hold a port to them."""

from __future__ import annotations

import argparse

import implementations

from ..checking import vectors
from ..jsonable import dumps
from ..running import interrupts
from ..terminal import style as terminal_style
from ..terminal.progress import Steps
from . import arguments

HELP = "golden vectors: export, or check a port"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="vectors_command", required=True)
    export = commands.add_parser(
        "export",
        help="write vectors from the canonical port",
        description="Write golden vectors: the canonical port's answers on a fixed set of "
        "cases (its output and VJP, with their bounds), as PATH.npz (the arrays) and "
        "PATH.json (the manifest: what each vector holds, the versions that made it, the npz "
        "file's SHA-256), for `vectors check --vectors PATH.json`.",
    )
    export.add_argument(
        "path",
        type=arguments.writable_file,
        help="output file stem: PATH.npz and PATH.json (existing files are replaced)",
    )
    check = commands.add_parser(
        "check",
        help="check a port against vectors alone",
        description="Check a port against golden vectors alone (no canonical port, no JAX): "
        "its answers on each vector's case, by the suite's tolerance model and the bounds the "
        "vector stores; exit 1 if one is off.",
    )
    arguments.add_port_argument(
        check, "the port to check (alias --port)", action="store", required=True
    )
    check.add_argument(
        "--vectors",
        type=arguments.existing_file,
        default=None,
        metavar="PATH",
        help="the vectors' JSON manifest (default: the committed set)",
    )
    check.add_argument("--json", action="store_true", help="print the results as JSON")
    for command in (export, check):
        arguments.add_output_arguments(command)


def validate(args: argparse.Namespace) -> None:
    """Read `--vectors` before any port loads: a manifest that is not one is a usage error."""
    if getattr(args, "vectors", None) is None:
        return

    try:
        vectors.load(args.vectors)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise arguments.UsageError(f"--vectors: cannot read {args.vectors}: {error}") from None


def run(args: argparse.Namespace) -> int:
    console = terminal_style.console()
    if args.vectors_command == "export":
        with Steps(terminal_style.console(stderr=True), "vectors export") as steps:
            steps.update(0, f"loading {implementations.CANONICAL}")
            with interrupts.deferred():  # a Ctrl-C waits for the framework's import
                canonical = implementations.load(implementations.CANONICAL)
            canonical.pin_matmul_precision()
            steps.update(0, "computing the vectors")
            try:
                path = vectors.export(canonical, args.path)
            except OSError as error:  # a full disk: each file is whole or absent (outputs)
                arguments.usage_exit(
                    "python -m conformance vectors export",
                    f"cannot write {error.filename or args.path}: {error.strerror or error}",
                )
        console.print(f"wrote {path} and {path.with_suffix('.npz')} ({len(vectors.SPECS)} vectors)")
        return 0
    # Loading a framework and checking takes seconds to a minute: progress on stderr.
    with Steps(terminal_style.console(stderr=True), "vectors check") as steps:
        steps.update(0, f"loading {args.implementation}")
        try:
            with interrupts.deferred():
                port = implementations.load(args.implementation)
        except implementations.PortUnavailable as error:
            port, unavailable = None, error
        if port is not None:
            steps.update(0, f"checking {port.name}")
            port.pin_matmul_precision()
            results = vectors.check(port, args.vectors)
    if port is None:
        console.print(f"[bold red]cannot check[/]: {unavailable}")
        return 2
    failed = [r for r in results if not r.passed]
    if args.json:
        print(dumps(results))
        return 1 if failed else 0
    for result in failed:
        line = f"✗ vector {result.vector} {result.check}: {result.message}"
        console.print(line, style="red", markup=False, highlight=False)
    ratios = [r.worst_ratio for r in results if r.worst_ratio is not None]
    worst = f", worst error/bound {max(ratios):.1e}" if ratios else ""
    colour = "red" if failed else "green"
    console.print(
        f"[{colour}]{port.name}: {len(results) - len(failed)}/{len(results)} vector checks "
        f"passed[/]{worst}"
    )
    return 1 if failed else 0
