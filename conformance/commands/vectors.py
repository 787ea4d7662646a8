"""`python -m conformance vectors`: write golden vectors, or hold a port to them."""

from __future__ import annotations

import argparse
from pathlib import Path

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
        check,
        "the ports to check (several after one flag, or repeated; alias --port)",
        required=True,
    )
    check.add_argument(
        "--vectors",
        type=manifest_path,
        default=None,
        metavar="PATH",
        help="the vectors' JSON manifest, or the PATH `vectors export PATH` was given "
        "(default: the committed set)",
    )
    check.add_argument("--json", action="store_true", help="print the results as JSON")
    for command in (export, check):
        arguments.add_output_arguments(command)


def manifest_path(text: str) -> Path:
    """`--vectors`: a manifest, or what `vectors export` was given (PATH, PATH.npz): it wrote
    PATH.json beside PATH.npz, and that is read."""
    path = Path(text)
    if path.is_file() and path.suffix != ".npz":
        return path
    written = path.with_suffix("").with_suffix(".json")  # as `vectors.export` names it
    if written.is_file():
        return written
    raise arguments.Invalid(
        f"must be a vectors manifest (PATH.json, as `vectors export PATH` writes it), got "
        f"{text!r}: neither it nor {str(written)!r} is a file"
    )


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
    code = 0
    every: list[vectors.VectorResult] = []
    # Loading a framework and checking takes seconds to a minute: progress on stderr.
    with Steps(terminal_style.console(stderr=True), "vectors check") as steps:
        for name in dict.fromkeys(args.implementation):
            steps.update(0, f"loading {name}")
            try:
                with interrupts.deferred():
                    port = implementations.load(name)
            except implementations.PortUnavailable as error:
                console.print(f"[bold red]cannot check[/] {name}: ", end="")
                console.print(error.reason, markup=False, highlight=False)
                code = 2
                continue
            steps.update(0, f"checking {port.name}")
            port.pin_matmul_precision()
            results = vectors.check(port, args.vectors)
            every += results
            if any(not r.passed for r in results):
                code = max(code, 1)
            if not args.json:
                _print_port(console, port.name, results)
    if args.json:
        print(dumps(every))
    return code


def _print_port(console, name: str, results: list[vectors.VectorResult]) -> None:
    """A port's failures, one line each, then its count and its worst error/bound: over every
    check, the failures included (a failure's ratio is past 1)."""
    failed = [r for r in results if not r.passed]
    for result in failed:
        line = f"✗ vector {result.vector} {result.check}: {result.message}"
        console.print(line, style="red", markup=False, highlight=False)
    measured = [r for r in results if r.worst_ratio is not None]
    worst = ""
    if measured:
        top = max(measured, key=lambda r: r.worst_ratio)
        where = f" (vector {top.vector} {top.check})" if not top.passed else ""
        worst = f", worst error/bound {top.worst_ratio:.1e}{where}"
    raised = sum(r.worst_ratio is None for r in failed)
    aside = f", {raised} raised before a measure" if raised else ""
    colour = "red" if failed else "green"
    console.print(
        f"[{colour}]{name}: {len(results) - len(failed)}/{len(results)} vector checks "
        f"passed[/]{worst}{aside}"
    )
