"""`python -m conformance compare`: every port side by side on one seed and one shape."""

from __future__ import annotations

import argparse

from ..running import interrupts
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
    parser.add_argument(
        "--implementation",
        action="append",
        type=arguments.port_name,
        metavar="NAME",
        help="compare only this port (repeatable; the canonical port is always the reference)",
    )
    parser.add_argument(
        "--repeats",
        type=arguments.positive_int,
        default=9,
        metavar="N",
        help="interleaved samples per warm timing (default: 9)",
    )
    parser.add_argument(
        "--no-first-call",
        action="store_true",
        help="skip the first-call timing (a fresh process per port)",
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def run(args: argparse.Namespace) -> int:
    """Print the comparison (or its JSON); exit 1 if a port is broken or exceeds a bound."""
    from rich.console import Console

    import implementations

    from .. import compare
    from ..reporting.jsonable import dumps

    console = Console(stderr=True)
    try:
        with console.status("comparing") as status:
            comparison = compare.run(
                args.seed,
                args.dim,
                args.features,
                args.implementation,
                repeats=args.repeats,
                first_calls=not args.no_first_call,
                progress=lambda message: (interrupts.check(), status.update(message)),
            )
    except implementations.PortUnavailable as error:
        console.print(f"error: the canonical port is needed to compare: {error.reason}")
        return 2
    if args.json:
        print(dumps(comparison.to_json()))
    else:
        compare.print_comparison(comparison, Console())
    return 1 if compare.failed(comparison) else 0
