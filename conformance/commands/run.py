"""`python -m conformance [run]`: every property on every port, the matrix, the mutants.

Exit codes: 0 when everything passes; 1 when a property fails, a port is
broken, crashed or timed out, the canonical port crashed, or a mutant is not
killed; 2 for usage errors; 5 when nothing was checked (every port named is not
installed, or no property ran: as pytest's "no tests ran"; `--allow-empty` makes it 0);
130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP) when a signal stopped the run (the report then
holds what finished, and never says passed). Each port runs in a worker process of its own
(see `conformance.running.suite`); `--json` prints exactly one JSON document on
stdout, whatever the ports print.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TextIO

from implementations.manifests import CANONICAL_PORT

from .. import merge, outputs
from ..jsonable import dumps
from ..mutants import MUTANTS
from ..page import csv_files
from ..running import interrupts, profiles, replays
from ..running.config import RunConfig, run_config
from ..running.results import NOTHING_CHECKED_EXIT, to_json
from ..running.suite import examples_per_property, run_suite
from ..tables.kinds.run import nothing_checked_reason, print_report
from ..terminal import style as terminal_style
from ..terminal.progress import Steps
from . import arguments

PROG = "python -m conformance run"
HELP = "run the suite (the default command)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        type=arguments.profile_name,
        default=None,
        help=f"Hypothesis profile: {', '.join(profiles.PROFILES)} "
        f"(default: ${profiles.ENV_VAR} or {profiles.DEFAULT})",
    )
    parser.add_argument(
        "--examples",
        type=arguments.positive_int,
        default=None,
        metavar="N",
        help="examples per property per port (default: the profile's)",
    )
    arguments.add_port_argument(
        parser, "check only these ports (several after one flag, or repeated; alias --port)"
    )
    parser.add_argument(
        "--property",
        **arguments.SEVERAL,
        type=arguments.property_key,
        metavar="P",
        help="run only these properties: a letter (c) or a key (c_vjp); several after one "
        "flag, or repeated",
    )
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")
    parser.add_argument(
        "--markdown",
        type=arguments.writable_file,
        default=None,
        metavar="PATH",
        help="also write the matrix as Markdown (as `merge --markdown` does); "
        "an existing file is replaced",
    )
    parser.add_argument(
        "--csv",
        type=arguments.writable_file,
        default=None,
        metavar="PATH",
        help="also write one row per port and property (status, examples, worst ratio, seconds) "
        "as CSV, raw numbers; an existing file is replaced",
    )
    parser.add_argument("--no-mutants", action="store_true", help="skip the mutation run")
    parser.add_argument(
        "--legend",
        action="store_true",
        help="print the legend (what the symbols mean) with a --reproduce too; a run prints "
        "it once, under its tables",
    )
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help=f"exit 0, not {NOTHING_CHECKED_EXIT}, when nothing was checked (every port named "
        "is not installed, or no property ran): for a CI matrix whose jobs may lack a framework",
    )
    parser.add_argument(
        "--no-shrink",
        action="store_true",
        help="report a failure at the first failing example found, not shrunk to a minimal "
        "one (quicker while a port is unfinished and fails everywhere)",
    )
    parser.add_argument(
        "--jobs",
        type=arguments.jobs,
        default="auto",
        metavar="N",
        help="worker processes at a time (default: auto, one per core)",
    )
    parser.add_argument(
        "--timeout",
        type=arguments.positive_seconds,
        default=None,
        metavar="SECONDS",
        help="the longest one example may go without progress before its worker is "
        "stopped (default: "
        + ", ".join(f"{p} {s:.0f}" for p, s in profiles.TIMEOUTS.items())
        + ")",
    )
    parser.add_argument(
        "--load-timeout",
        type=arguments.positive_seconds,
        default=None,
        metavar="SECONDS",
        help="the same for loading a port (default: the profile's timeout, or --timeout if "
        "longer: a loaded machine can stall an import on the disk)",
    )
    parser.add_argument(
        "--compute-timeout",
        type=arguments.positive_seconds,
        default=None,
        metavar="SECONDS",
        help="the longest one example may compute without a message, as a slow first "
        "compile does, before its worker is stopped (default: ten times the timeout)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run in this process, no workers (for debugging: a crash ends the run)",
    )
    parser.add_argument(
        "--expectations",
        type=arguments.existing_directory,
        default=None,
        metavar="DIR",
        help="read expected failures from DIR/<port>.txt",
    )
    parser.add_argument(
        "--canonical",
        type=arguments.port_name,
        default=None,
        metavar="NAME",
        help=f"the reference port (default: {CANONICAL_PORT})",
    )
    parser.add_argument(
        "--reproduce",
        type=arguments.replay_blob,
        default=None,
        metavar="BLOB",
        help="replay one failing example (the blob a failure's replay command gives); "
        "a replay that passes now says 'did not reproduce'",
    )


def validate(args: argparse.Namespace) -> None:
    """What argparse cannot check alone: `$REMAT_PROFILE` when `--profile` is not given, and
    a `--compute-timeout` below the example timeout (it would never be reached)."""
    args.profile = arguments.profile_from_environment(args.profile)
    if args.reproduce:  # a blob says whose it is: the run must be that test, or name none
        args.implementation, args.property = replays.ports_and_properties(
            args.reproduce, args.implementation, args.property
        )
        try:
            replays.check(args.reproduce, args.implementation, args.property)
        except ValueError as error:
            raise arguments.UsageError(f"--reproduce: {error}") from None
    if args.compute_timeout is not None:
        timeout = args.timeout if args.timeout is not None else profiles.TIMEOUTS[args.profile]
        if args.compute_timeout < timeout:
            raise arguments.UsageError(
                f"--compute-timeout must be at least the timeout ({timeout:g} s), "
                f"got {args.compute_timeout:g}"
            )
    try:  # before the run: its side outputs never share a path or write through a link
        outputs.check_paths({"--markdown": args.markdown, "--csv": args.csv})
    except outputs.OutputError as error:
        raise arguments.UsageError(str(error)) from None


def config_from(args: argparse.Namespace) -> RunConfig:
    """The run the flags ask for, by `run_config`: the API's and the pytest plugin's defaults."""
    return run_config(
        args.implementation,
        profile=args.profile,
        examples=args.examples,
        jobs=args.jobs,
        canonical=args.canonical,
        properties=tuple(dict.fromkeys(args.property or ())),
        mutants=not args.no_mutants,
        timeout=args.timeout,
        load_timeout=args.load_timeout,
        compute_timeout=args.compute_timeout,
        in_process=args.in_process,
        expectations_dir=args.expectations,
        reproduce=args.reproduce or "",
        shrink=not args.no_shrink,
    )


def run(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    config = config_from(args)
    names = list(config.ports)

    # The report goes to copies of this process's stdout and stderr: a port run
    # in-process may redirect the originals, and must not reach the report.
    out = _stream(1)
    console = terminal_style.console(file=_stream(2) if args.json else out)
    per_port = sum(examples_per_property(p, args.examples) for p in config.selected)
    live = terminal_style.live(console)
    total = per_port * len(names) + (len(MUTANTS) if config.mutants else 0)
    # A bar per port on a terminal; off one, a line every ten seconds (`Steps`).
    with (
        Progress(
            TextColumn("{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not live,
        ) as bar,
        # On stderr, as bench's and compare's: stdout holds the report alone.
        contextlib.nullcontext()
        if live
        else Steps(terminal_style.console(file=_stream(2)), "run", total) as steps,
    ):
        tasks = {name: bar.add_task(name, total=per_port) for name in names}
        if config.mutants:
            tasks["mutants"] = bar.add_task("mutants", total=len(MUTANTS))

        def progress(task: str, kind: str, value) -> None:
            if kind == "advance" and task in tasks:
                bar.advance(tasks[task], value)
                if steps is not None:
                    steps.update(value, task)

        report = run_suite(config, progress)
    data = to_json(report)
    verdict = _exit_code(report, args.allow_empty)
    # Before the report is printed: a reader that closes the pipe early cannot lose it. A
    # side output that cannot be written is said beside the verdict, whose code stands.
    if args.markdown is not None:
        _write_side_output("--markdown", args.markdown, _write_markdown, data, verdict)
    if args.csv is not None:
        _write_side_output("--csv", args.csv, csv_files.write_run, data, verdict)
    try:
        if args.json:
            out.write(dumps(data) + "\n")
        else:
            print_report(report, console, show_legend=args.legend or not args.reproduce)
        out.flush()
    except BrokenPipeError:
        _to_devnull(out)  # its buffer would raise again when it is closed
        raise
    except OSError as error:  # a full disk under `--json > file`: the report is lost, say so
        _to_devnull(out)
        words = {"interrupted": "was interrupted", "nothing checked": "checked nothing"}
        words = words.get(report.verdict, report.verdict)
        print(f"{PROG}: error: cannot write the report to stdout: "
              f"{error.strerror or error}; the run {words}", file=sys.stderr)  # fmt: skip
        return 2
    if report.interrupted:
        print("interrupted: the report holds what finished", file=sys.stderr)
    elif report.verdict == "nothing checked":
        code = f"exit {verdict}" + ("" if verdict else ": --allow-empty")
        print(f"nothing was checked: {nothing_checked_reason(data)} ({code})", file=sys.stderr)
    return interrupts.exit_code(verdict)


def _exit_code(report, allow_empty: bool) -> int:
    """1 for a failure; `NOTHING_CHECKED_EXIT` for a run that checked nothing, unless
    `allow_empty`; else 0 (an interrupt's code wins over each: `interrupts.exit_code`)."""
    if report.failed:
        return 1
    if report.verdict == "nothing checked" and not allow_empty:
        return NOTHING_CHECKED_EXIT
    return 0


def _write_side_output(flag: str, path: Path, write, data: dict, verdict: int) -> bool:
    """`write(path, data)`; False, said on stderr beside the verdict, if it cannot."""
    try:
        write(path, data)
    except OSError as error:
        outputs.say_side_output_failed(PROG, flag, path, error, verdict)
        return False
    return True


def _write_markdown(path: Path, data: dict) -> None:
    """Write the run's matrix as Markdown, by the writer `merge` uses, whole or not at all."""
    merged = merge.combine([merge.Source(1, "this run", data)])
    outputs.write_text(path, merge.markdown(merged))


def _to_devnull(stream: TextIO) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
    os.close(devnull)


def _stream(descriptor: int) -> TextIO:
    return os.fdopen(os.dup(descriptor), "w", buffering=1, encoding="utf-8")
