"""`python -m conformance versions EXTRA`: which framework versions conform, in one matrix.

For one framework's extra, each version set (`--versions`; by default `lowest`, the lowest
each of its requirements allows and the index serves, `pin`, constraints.txt's, and `newest`,
the newest served) is installed with pip into a virtualenv of its own under the cache
(`$REMAT_CACHE/versions/`), every other distribution at its constraints pin (a pin that
conflicts is released, and the report says so). Venvs are reused by later sweeps that ask for
the same; `--remove` removes each once its set is done. In each, the suite runs on the extra's
ports (`run --json`, `--profile ci` by default), each port is probed under every remat policy,
and each documented degradation of its stack is probed. The matrix has a row per port per
set; under it, each set, where each documented degradation holds and the first version that
differs, and every failure. A set that pip cannot install is a row that says why.

`--versions installed` is the versions this interpreter has installed (read from their
distributions), run with this interpreter itself: no venv is made and nothing is installed
(no index asked), and the sweep is otherwise the same (the suite, the probes, the reports).
`--remove` never removes this interpreter's environment.

torch is swept only where named (`--versions torch==2.4.0`): PyPI's Linux torch wheels are
CUDA builds of several GB, and `lowest` and `newest` hold it at its pin, saying so.
Exit codes: 0 every set installed and passed; 1 a set failed, or could not be installed; 2 a
usage error; 130/143 interrupted (the matrix holds the sets that finished).
"""

from __future__ import annotations

import argparse
import sys

from .. import outputs, versions
from ..jsonable import dumps
from ..running import interrupts, profiles
from ..terminal import style as terminal_style
from ..terminal.progress import Steps
from ..versions import render, summary
from . import arguments

PROG = "python -m conformance versions"
HELP = "install version sets of one extra into venvs and run the suite in each: one matrix"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "extra", metavar="EXTRA", help="one framework's extra, as pyproject.toml names it"
    )
    parser.add_argument(
        "--versions",
        nargs="+",
        metavar="SET",
        default=None,
        help="version sets: lowest, pin, newest, installed (this interpreter's versions, run "
        "in it: no venv, no install), or DIST==VERSION[,DIST==VERSION...] "
        "(default: lowest pin newest)",
    )
    arguments.add_port_argument(
        parser, "sweep only these ports (several, or repeated; default: the extra's)"
    )
    parser.add_argument(
        "--profile",
        type=arguments.profile_name,
        default="ci",
        help=f"each run's Hypothesis profile: {', '.join(profiles.PROFILES)} (default: ci)",
    )
    parser.add_argument(
        "--examples", type=arguments.positive_int, default=None, metavar="N",
        help="examples per property per port (default: the profile's)",
    )  # fmt: skip
    parser.add_argument(
        "--property", **arguments.SEVERAL, type=arguments.property_key, metavar="P",
        help="run only these properties (several after one flag, or repeated)",
    )  # fmt: skip
    parser.add_argument("--no-mutants", action="store_true", help="skip each run's mutants")
    parser.add_argument(
        "--no-policies",
        action="store_true",
        help="skip the policy cells and the documented degradations' probes",
    )
    parser.add_argument(
        "--timeout", type=arguments.positive_seconds, default=None, metavar="SECONDS",
        help="each run's --timeout",
    )  # fmt: skip
    parser.add_argument(
        "--jobs", type=arguments.jobs, default=None, metavar="N", help="each run's --jobs"
    )
    parser.add_argument(
        "--constraints",
        type=arguments.existing_file,
        default=None,
        metavar="PATH",
        help="the pins (default: the checkout's constraints.txt)",
    )
    parser.add_argument(
        "--reports",
        type=arguments.writable_directory,
        default=None,
        metavar="DIR",
        help="also write each set's run --json report there (for merge)",
    )
    parser.add_argument(
        "--remove", action="store_true", help="remove each set's venv once it is done"
    )
    parser.add_argument("--json", action="store_true", help="print the sweep as JSON")
    parser.add_argument(
        "--out", type=arguments.writable_file, default=None, metavar="PATH",
        help="also write the sweep's JSON (for report)",
    )  # fmt: skip
    parser.add_argument(
        "--markdown", type=arguments.writable_file, default=None, metavar="PATH",
        help="also write the matrix as Markdown",
    )  # fmt: skip


def validate(args: argparse.Namespace) -> None:
    """The extra, the sets' spelling and the ports, before any registry is asked."""
    try:
        args.plan = versions.make(args.extra, args.versions, args.implementation, args.constraints)
    except versions.PlanError as error:
        raise arguments.UsageError(str(error)) from None


def run(args: argparse.Namespace) -> int:
    out = terminal_style.console()
    console = terminal_style.console(stderr=True)
    options = versions.Options(
        profile=args.profile,
        examples=args.examples,
        properties=tuple(dict.fromkeys(args.property or ())),
        mutants=not args.no_mutants,
        timeout=args.timeout,
        jobs=args.jobs,
        policies=not args.no_policies,
        remove=args.remove,
        reports=args.reports,
    )
    with _progress(console) as progress:
        if any(word in ("lowest", "newest") for word in args.plan.words):
            progress(0, 0, args.extra, "asking the index for the versions it serves")
        versions.resolve(args.plan)
        sweep = versions.run(args.plan, options, progress)
    data = summary.to_json(sweep)
    try:
        if args.out is not None:
            outputs.write_text(args.out, dumps(data) + "\n")
        if args.markdown is not None:
            outputs.write_text(args.markdown, render.markdown(data))
    except OSError as error:
        arguments.usage_exit(PROG, f"cannot write {error.filename}: {error.strerror}")
    if args.json:
        print(dumps(data))
    else:
        render.print_sweep(data, out)
    if sweep.interrupted:
        print("interrupted: the matrix holds the sets that finished", file=sys.stderr)
    return interrupts.exit_code(1 if sweep.failed else 0)


class _progress:
    """Progress on stderr: a live line per set on a terminal, else a line per step."""

    QUIET = ("Collecting", "Downloading", "Building", "Installing collected")

    def __init__(self, console):
        self.console, self.live = console, terminal_style.live(console)
        self.bar, self.tasks, self.said = None, {}, {}
        # Off a terminal, a line every ten seconds too: a pip install says nothing for minutes.
        self.steps = None if self.live else Steps(console, "versions")

    def __enter__(self):
        if self.steps is not None:
            self.steps.__enter__()
        if self.live:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                console=self.console, transient=True,
            )  # fmt: skip
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        if self.steps is not None:
            self.steps.__exit__(*exc)
        return False

    def __call__(self, number: int, total: int, title: str, text: str) -> None:
        head = f"[{number}/{total}] {title}" if total else title
        if self.bar is not None:
            if number not in self.tasks:
                self.tasks[number] = self.bar.add_task(head, total=None)
            self.bar.update(self.tasks[number], description=f"{head}: {text}")
            return
        step = text.split(" · ", 1)[0]
        if self.steps is not None:
            self.steps.latest = f"{head}: {step}"  # what the heartbeat names
        if text.startswith(self.QUIET) or self.said.get(number) == step:
            return
        self.said[number] = step
        print(f"versions: {head}: {step}", file=sys.stderr, flush=True)
