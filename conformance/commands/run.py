"""`python -m conformance [run]`: every property on every port, the matrix, the mutants.

Exit codes: 0 when everything passes; 1 when a property fails, a port is
broken, crashed or timed out, the canonical port crashed, or a mutant is not
killed; 2 for usage errors. Each port runs in a worker process of its own
(see `conformance.running.suite`); `--json` prints exactly one JSON document on
stdout, whatever the ports print.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TextIO

from ..running import profiles

HELP = "run the suite (the default command)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        choices=profiles.PROFILES,
        default=None,
        help=f"Hypothesis profile (default: ${profiles.ENV_VAR} or {profiles.DEFAULT})",
    )
    parser.add_argument(
        "--examples",
        type=int,
        default=None,
        metavar="N",
        help="examples per property per port (default: the profile's)",
    )
    parser.add_argument(
        "--implementation",
        action="append",
        metavar="NAME",
        help="check only this port (repeatable)",
    )
    parser.add_argument(
        "--property",
        action="append",
        metavar="P",
        help="run only this property: its letter (c) or key (c_vjp); repeatable",
    )
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")
    parser.add_argument(
        "--markdown",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the matrix as Markdown (as `merge --markdown` does)",
    )
    parser.add_argument("--no-mutants", action="store_true", help="skip the mutation run")
    parser.add_argument(
        "--jobs",
        default="auto",
        metavar="N",
        help="worker processes at a time (default: auto, one per core)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the longest one example (or loading a port) may take before its worker is "
        "stopped (default: "
        + ", ".join(f"{p} {s:.0f}" for p, s in profiles.TIMEOUTS.items())
        + ")",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run in this process, no workers (for debugging: a crash ends the run)",
    )
    parser.add_argument(
        "--expectations",
        type=Path,
        default=None,
        metavar="DIR",
        help="read expected failures from DIR/<port>.txt",
    )
    parser.add_argument(
        "--canonical",
        default=None,
        metavar="NAME",
        help="the reference port (default: flax_linen)",
    )
    parser.add_argument(
        "--reproduce",
        default="",
        metavar="BLOB",
        help="replay one failing example (the blob a failure's replay command gives)",
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    import implementations

    from ..checking.properties import BY_ID, BY_KEY, PROPERTIES
    from ..mutants import MUTANTS
    from ..reporting.jsonable import dumps
    from ..reporting.report import print_report, to_json
    from ..running.suite import RunConfig, examples_per_property, run_suite

    profile = profiles.load(args.profile)
    registered = implementations.registered()
    names = args.implementation or list(registered)
    canonical = args.canonical or implementations.CANONICAL
    unknown = [n for n in [*names, canonical] if n not in registered]
    if unknown:
        return _usage(f"no port named {', '.join(unknown)}; registered: {', '.join(registered)}")
    keys = []
    for given in args.property or []:
        prop = BY_ID.get(given) or BY_KEY.get(given)
        if prop is None:
            known = ", ".join(p.key for p in PROPERTIES)
            return _usage(f"no property {given!r}; known: {known} (or their letters)")
        keys.append(prop.key)
    if args.markdown is not None and not args.markdown.parent.is_dir():
        return _usage(f"--markdown: no directory {str(args.markdown.parent)!r} to write into")
    try:
        jobs = os.cpu_count() or 1 if args.jobs == "auto" else int(args.jobs)
    except ValueError:
        return _usage(f"--jobs must be a number or 'auto', got {args.jobs!r}")
    from hypothesis import settings

    config = RunConfig(
        ports=tuple(names),
        profile=profile,
        max_examples=args.examples if args.examples is not None else settings().max_examples,
        properties=tuple(keys),
        mutants=not args.no_mutants,
        jobs=max(1, jobs),
        timeout=args.timeout,
        in_process=args.in_process,
        expectations_dir=args.expectations,
        canonical=canonical,
        reproduce=args.reproduce,
    )

    # The report goes to copies of this process's stdout and stderr: a port run
    # in-process may redirect the originals, and must not reach the report.
    out = _stream(1)
    console = Console(file=_stream(2) if args.json else out)
    per_port = sum(examples_per_property(p, args.examples) for p in config.selected)
    with Progress(
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        tasks = {name: bar.add_task(name, total=per_port) for name in names}
        if config.mutants:
            tasks["mutants"] = bar.add_task("mutants", total=len(MUTANTS))

        def progress(task: str, kind: str, value) -> None:
            if kind == "advance" and task in tasks:
                bar.advance(tasks[task], value)

        report = run_suite(config, progress)
    data = to_json(report)
    if args.json:
        out.write(dumps(data) + "\n")
    else:
        print_report(report, console)
    out.flush()
    if args.markdown is not None and not _write_markdown(data, args.markdown):
        return 2
    return 1 if report.failed else 0


def _write_markdown(data: dict, path: Path) -> bool:
    """Write the run's matrix as Markdown, by the writer `merge` uses; False if it cannot."""
    from .. import merge

    merged = merge.combine([merge.Source(1, "this run", data)])
    try:
        path.write_text(merge.markdown(merged), encoding="utf-8")
    except OSError as error:
        _usage(f"cannot write {path}: {error.strerror}")
        return False
    return True


def _stream(descriptor: int) -> TextIO:
    return os.fdopen(os.dup(descriptor), "w", buffering=1, encoding="utf-8")


def _usage(message: str) -> int:
    import sys

    print(f"error: {message}", file=sys.stderr)
    return 2
