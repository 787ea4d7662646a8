"""`python -m conformance compare`: every port side by side on one seed and one shape."""

from __future__ import annotations

import argparse
import sys

import implementations

from .. import comparison as compare
from ..jsonable import dumps
from ..page import csv_files, pictures
from ..running import interrupts
from ..terminal import style as terminal_style
from ..terminal.progress import Steps
from . import arguments

HELP = "one table: outputs, gradients, residuals, time"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seed", type=arguments.seed, default=0, help="from 0 to 2**63 - 1 (default: 0)"
    )
    parser.add_argument(
        "--dim", type=arguments.positive_int, default=256, metavar="D", help="default: 256"
    )
    parser.add_argument(
        "--features", type=arguments.positive_int, default=256, metavar="F", help="default: 256"
    )
    arguments.add_port_argument(
        parser,
        "compare only these ports (several after one flag, or repeated; alias --port; the "
        "canonical port is always the reference)",
    )
    parser.add_argument(
        "--repeats",
        type=arguments.positive_int,
        default=9,
        metavar="N",
        help="interleaved samples per warm timing (default: 9)",
    )
    parser.add_argument(
        "--first-call",
        action="store_true",
        help="also time each port's first call in a fresh process, without compilation "
        "cache (about a minute per port on a 2-core machine)",
    )
    parser.add_argument(
        "--csv",
        type=arguments.writable_file,
        default=None,
        metavar="PATH",
        help="also write one row per port (every difference, bound, bits, residual, time) "
        "as CSV, raw numbers; an existing file is replaced",
    )
    parser.add_argument(
        "--plot",
        type=arguments.writable_directory,
        default=None,
        metavar="DIR",
        help="also draw the pictures into DIR (made if missing): compare-strip.png (saved and "
        "rerun per port), compare-time-vs-saved.png, compare-bits.png; needs matplotlib",
    )
    parser.add_argument(
        "--no-first-call",
        action="store_true",
        help="no first calls, said explicitly: the default since --first-call became opt-in "
        "(report --make compare passes it; it wins over --first-call)",
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def run(args: argparse.Namespace) -> int:
    """Print the comparison (or its JSON); exit 1 if a port is broken or exceeds a bound."""
    import contextlib
    import shlex

    console = terminal_style.console(stderr=True)
    # What the ports print goes to stderr (DeepSpeed logs to stdout when imported), so that
    # stdout holds the report alone: `--json` is exactly one JSON document.
    try:
        with contextlib.redirect_stdout(sys.stderr), Steps(console, "compare") as steps:
            comparison = compare.run(
                args.seed,
                args.dim,
                args.features,
                args.implementation,
                repeats=args.repeats,
                first_calls=args.first_call and not args.no_first_call,
                progress=lambda message: (
                    interrupts.check(),
                    steps.update(description=message),
                ),
            )
    except implementations.PortUnavailable as error:
        console.print(f"error: the canonical port is needed to compare: {error.reason}")
        return 2
    # The command line as given (cli.main keeps it), so the title says what was asked for.
    comparison.command = shlex.join(getattr(args, "argv", None) or ["compare"])
    if args.csv is not None or args.plot is not None:
        _write_files(comparison.to_json(), args, console)
    if args.json:
        print(dumps(comparison.to_json()))
    else:
        compare.print_comparison(comparison, terminal_style.console())
    return 1 if compare.failed(comparison) else 0


def _write_files(data: dict, args: argparse.Namespace, console) -> None:
    """`--csv` and `--plot`: the table as CSV, the pictures as PNG files."""
    if args.csv is not None:
        csv_files.write_compare(args.csv, data)
        console.print(f"compare: wrote {args.csv}")
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            from rich.markup import escape

            console.print(
                "[yellow]no pictures[/]: matplotlib is not installed "
                f"({escape(implementations.install_command('bench'))})"
            )
            return

        written = pictures.write_compare_pictures(data, args.plot)
        console.print("compare: wrote " + ", ".join(str(p) for p in written))
