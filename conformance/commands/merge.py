"""`python -m conformance merge REPORT.json ...`: many runs' reports as one matrix.

Each report is a `run --json` document (one per CI job, say). The matrix has
a row per port per report, grouped by machine and device; a port whose
reports disagree on the same machine and device is marked, never hidden.
Exit codes: 0 when every report passed; 1 when any report failed (judged
from its ports' states, outcomes and mutants, never from its "failed"
flag); 2 for a usage error (a file unreadable, not JSON, or of a schema this version does
not read; an output that is a symlink, an input or another output's path). A `--markdown`
or `--out` that cannot be written (a full disk) is said on stderr, and the verdict's code
stands; the file is written whole or not at all (`conformance.outputs`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import merge, outputs
from ..jsonable import dumps
from ..terminal import style as terminal_style
from . import arguments

PROG = "python -m conformance merge"
HELP = "merge run --json reports into one matrix (terminal, Markdown, JSON)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Read (and refused by name, exit 2) before anything is written: `merge.read`.
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json")
    parser.add_argument(
        "--markdown",
        type=arguments.writable_file,
        default=None,
        metavar="PATH",
        help="also write the matrix as Markdown (e.g. for $GITHUB_STEP_SUMMARY); "
        "an existing file is replaced",
    )
    parser.add_argument(
        "--out",
        type=arguments.writable_file,
        default=None,
        metavar="PATH",
        help="also write the merged JSON; an existing file is replaced",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the merged JSON instead of the matrix"
    )


def run(args: argparse.Namespace) -> int:
    try:
        outputs.check_paths({"--markdown": args.markdown, "--out": args.out}, args.reports)
    except outputs.OutputError as error:
        arguments.usage_exit(PROG, str(error))
    try:
        merged = merge.combine(merge.read_all(args.reports))
    except merge.ReportError as error:
        arguments.usage_exit(PROG, str(error))
    verdict = 1 if merged.failed else 0
    # Side outputs: one that cannot be written is said beside the verdict, whose code stands.
    for flag, path, text in (
        ("--markdown", args.markdown, lambda: merge.markdown(merged)),
        ("--out", args.out, lambda: dumps(merge.to_json(merged)) + "\n"),
    ):
        if path is not None:
            try:
                outputs.write_text(path, text())
            except OSError as error:
                outputs.say_side_output_failed(PROG, flag, path, error, verdict)
    if args.json:
        print(dumps(merge.to_json(merged)))
    else:
        merge.print_merged(merged, terminal_style.console())
    return verdict
