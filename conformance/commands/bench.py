"""`python -m conformance bench`: memory and time of an L-block stack against L, with a plot."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..bench import DEFAULTS, FRAMEWORKS
from ..bench.measure import Settings
from ..reporting.jsonable import dumps

HELP = "memory and time against depth, with a plot"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("bench-out"),
        help="output directory for bench.json, bench.md, bench.png (default: bench-out)",
    )
    parser.add_argument(
        "--depths",
        type=int,
        nargs="+",
        default=None,
        metavar="L",
        help="stack depths to sweep (default: 1 2 4 8 16 32)",
    )
    parser.add_argument("--batch", type=int, default=None, metavar="B", help="default: 1024")
    parser.add_argument("--features", type=int, default=None, metavar="F", help="default: 256")
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        metavar="N",
        help="interleaved timing repeats per round (default: 11)",
    )
    parser.add_argument(
        "--max-repeats",
        type=int,
        default=None,
        metavar="N",
        help="more rounds until every time ratio's spread is within ±5%%, up to N repeats "
        "(default: 55)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the data (default: 0)")
    parser.add_argument(
        "--framework",
        action="append",
        choices=tuple(FRAMEWORKS),
        help="bench only this framework (repeatable; default: all installed)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON instead of the table")


def settings_from(args: argparse.Namespace) -> Settings:
    """The sweep's settings: the defaults, overridden by the command line."""
    repeats = args.repeats or DEFAULTS.repeats
    return Settings(
        depths=tuple(args.depths) if args.depths else DEFAULTS.depths,
        batch=args.batch or DEFAULTS.batch,
        features=args.features or DEFAULTS.features,
        repeats=repeats,
        max_repeats=args.max_repeats or max(DEFAULTS.max_repeats, repeats),
        seed=DEFAULTS.seed if args.seed is None else args.seed,
    )


def run(args: argparse.Namespace) -> int:
    """Run the bench and write `bench.json`, `bench.md` and `bench.png` into `args.out`."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from ..bench import BenchReport, load_average, load_frameworks, render, total_steps
    from ..bench import run as sweep

    console = Console(stderr=True)
    try:
        settings = settings_from(args)
    except ValueError as error:
        console.print(f"error: {error}")
        return 2
    frameworks, skipped = load_frameworks(args.framework or list(FRAMEWORKS))
    for name, reason in skipped.items():
        console.print(f"[yellow]skip[/] {name}: {reason}")
    report = BenchReport(settings, skipped=skipped)
    report.versions = {name: module.versions() for name, module in frameworks.items()}
    report.load["before"] = load_average()
    started = time.perf_counter()
    with Progress(
        TextColumn("{task.description:<36}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("bench", total=total_steps(settings, frameworks))
        report.results = sweep(
            settings,
            frameworks,
            progress=lambda description, advance: bar.update(
                task, advance=advance, **({"description": description} if description else {})
            ),
        )
    report.seconds = time.perf_counter() - started
    report.load["after"] = load_average()

    args.out.mkdir(parents=True, exist_ok=True)
    data = report.to_json()
    (args.out / "bench.json").write_text(dumps(data) + "\n")
    (args.out / "bench.md").write_text(render.markdown(report))
    written = [args.out / "bench.json", args.out / "bench.md"]
    plotted = render.plot(report, args.out / "bench.png")
    if plotted is None:
        written.append(args.out / "bench.png")
    else:
        console.print(f"[yellow]no plot[/]: {plotted}")
    if args.json:
        print(dumps(data))
    else:
        render.print_report(report, Console())
    console.print(
        f"bench: {report.seconds:.0f}s wall · wrote " + ", ".join(str(p) for p in written)
    )
    return 0
