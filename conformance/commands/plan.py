"""`python -m conformance plan --depth L --memory M`: where to put the checkpoint regions over L
blocks within M of memory, from the true optimum (`implementations.optimum`, docs/SCHEDULES.md),
and how each framework places them.

It prints the optimal placement (a region in brackets, a block index run plain), its predicted
peak and block evaluations (Revolve's beside them), then per framework the nearest schedule it
can express and the code that places it. M is in bytes (`1048576`, `512KiB`, `1MiB`) or units
(`16units`: one B x F float32 tensor). The model's a, what a taped block keeps beside its
input, is 1 unit, or with `--framework` that stack's `INTERNALS_UNITS`. `--measure` runs it
through each framework (`--framework`, else every planned one on the measurement core:
`measured_by_default`) and prints the
measured peak and evaluations against the prediction. Exit codes: 0, or 2 for a bad argument
(one line naming it; a budget below the least says the least).
"""

from __future__ import annotations

import argparse
import re

from implementations.optimum import least_peak

from ..benchmark import plan as planning
from ..benchmark.schedules import BATCH, FEATURES
from . import arguments, framework_names

PROG = "python -m conformance plan"
HELP = "where to put the checkpoint regions for L blocks within a memory budget, per framework"
_MEMORY = re.compile(r"^\s*(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>B|KiB|MiB|GiB|units?)?\s*$")


def memory(text: str) -> tuple[float, str]:
    """A memory budget: an amount and its unit (bytes when none is said)."""
    match = _MEMORY.match(text)
    if not match or float(match["amount"]) <= 0:
        raise arguments.Invalid(
            f"must be a positive size in bytes, KiB, MiB, GiB or units (16units), got {text!r}"
        )
    unit = match["unit"] or "B"
    return float(match["amount"]), "units" if unit.startswith("unit") else unit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--depth", type=arguments.positive_int, required=True, metavar="L", help="blocks L"
    )
    parser.add_argument(
        "--memory",
        type=memory,
        required=True,
        metavar="M",
        help="the memory budget for kept activations: bytes, KiB, MiB, GiB or units "
        "(one B x F float32 tensor)",
    )
    parser.add_argument(
        "--batch",
        type=arguments.positive_int,
        default=BATCH,
        metavar="B",
        help=f"rows of a block's input (default {BATCH})",
    )
    parser.add_argument(
        "--features",
        type=arguments.positive_int,
        default=FEATURES,
        metavar="F",
        help=f"a block's width (default {FEATURES})",
    )
    parser.add_argument(
        "--framework",
        type=framework_names.bench_framework,
        default=None,
        metavar="NAME",
        help="plan for this framework alone, with its measured internals per block (a)",
    )
    parser.add_argument(
        "--measure",
        action="store_true",
        help="run the placement and show measured against predicted (--framework, else "
        "every planned framework on the measurement core)",
    )


def validate(args: argparse.Namespace) -> None:
    """The budget against the least any schedule keeps, in the framework's units."""
    amount, unit = args.memory
    args.internals = planning.DEFAULT_INTERNALS
    if args.framework is not None:
        known = planning.declared(args.framework)
        if known.internals_units is None:
            raise arguments.UsageError(
                f"--framework {args.framework} declares no INTERNALS_UNITS in its bench module: "
                "the model has no a for it"
            )
        args.internals = known.internals_units
    args.units = planning.budget_units(amount, unit, args.batch, args.features)
    least = least_peak(args.depth, args.internals)
    if args.units < least:
        size = planning.unit_bytes(args.batch, args.features)
        raise arguments.UsageError(
            f"--memory {args.units:g} units is below the least any schedule keeps at L = "
            f"{args.depth}: {least:g} units ({least * size:g} bytes at B = {args.batch}, "
            f"F = {args.features}: one checkpoint and one taped block)"
        )


def measured_by_default() -> list[str]:
    """The frameworks `--measure` runs when none is named: every planned one (it declares
    `PLACE_CODE`) whose bench module is on the measurement core (`StackBench`), those `bench
    --schedules` runs only when named among them (one placement is one case) and those that
    declare no a (the plan's a predicts them; what their instrument cannot see it says)."""
    return [name for name in planning.planned_frameworks() if planning.declared(name).on_the_core]


def run(args: argparse.Namespace) -> int:
    frameworks = [args.framework] if args.framework else planning.planned_frameworks()
    plan = planning.make_plan(
        args.depth, args.units, args.batch, args.features, frameworks, args.internals
    )
    for line in planning.lines(plan):
        print(line)
    if args.measure:
        measured = [args.framework] if args.framework else measured_by_default()
        for line in planning.measured_lines(plan, measured):
            print(line, flush=True)
    return 0
