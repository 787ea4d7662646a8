"""`python -m conformance bench`: memory and time of an L-block stack against L, with a plot."""

from __future__ import annotations

import argparse
import time

from implementations import manifests

from .. import outputs
from ..benchmark import (
    DEFAULT_FRAMEWORKS,
    DEFAULTS,
    FRAMEWORKS,
    OPT_IN,
    SCHEDULES_OPT_IN,
    BenchReport,
    load_average,
    load_frameworks,
    render,
    scale,
    total_steps,
)
from ..benchmark import run as sweep
from ..benchmark import schedules as schedule_sizes
from ..benchmark.measure import Settings
from ..jsonable import dumps
from ..page import csv_files
from ..running import interrupts
from ..tables.kinds.bench import load_warning
from ..terminal import style as terminal_style
from ..terminal.progress import Steps
from . import arguments, bench_policies, bench_schedules, framework_names
from .bench_policies import load_text

HELP = "memory and time against depth, with a plot"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=arguments.writable_directory,
        default="bench-out",  # a string, so that argparse checks it by `type` too
        metavar="DIR",
        help="output directory for bench.json, bench.md, bench.png, made if missing; "
        "files of those names in it are replaced, and a file named DIR is refused "
        "(default: bench-out)",
    )
    parser.add_argument(
        "--depths",
        type=arguments.positive_int,
        nargs="+",
        default=None,
        metavar="L",
        help="stack depths to sweep (default: 1 2 4 8 16 32)",
    )
    parser.add_argument(
        "--batch",
        type=arguments.positive_int,
        default=None,
        metavar="B",
        help=f"default: {DEFAULTS.batch} ({schedule_sizes.BATCH} with --schedules)",
    )
    parser.add_argument(
        "--features",
        type=arguments.positive_int,
        default=None,
        metavar="F",
        help=f"default: {DEFAULTS.features} ({schedule_sizes.FEATURES} with --schedules)",
    )
    parser.add_argument(
        "--repeats",
        type=arguments.positive_int,
        default=None,
        metavar="N",
        help="interleaved timing repeats per round (default: 11)",
    )
    parser.add_argument(
        "--max-repeats",
        type=arguments.positive_int,
        default=None,
        metavar="N",
        help="more rounds until every time ratio's spread is within ±5%%, up to N repeats "
        "(default: 55)",
    )
    parser.add_argument(
        "--seed",
        type=arguments.seed,
        default=None,
        help="seed of the data, from 0 to 2**63 - 1 (default: 0)",
    )
    parser.add_argument(
        "--framework",
        **arguments.SEVERAL,
        type=framework_names.bench_framework,
        metavar="NAME",
        help=f"bench only these frameworks ({', '.join(FRAMEWORKS)}), or the benches of these "
        "ports (a port names the bench of its stack); several after one flag, or repeated "
        "(default: every one installed but "
        + "; ".join(f"{name}, which runs only when named: {why}" for name, why in OPT_IN.items())
        + ")",
    )
    parser.add_argument(
        "--csv",
        type=arguments.writable_file,
        default=None,
        metavar="PATH",
        help="also write one row per configuration and depth (n, quartiles of the times) "
        "as CSV, raw numbers; an existing file is replaced",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    parser.add_argument(
        "--scale",
        action="store_true",
        help="instead: per-rank saved bytes and step time of the sharded ports ("
        + ", ".join(manifests.sharded())
        + ") for N = 1, 2, 4, with and without the checkpoint (scale.json, scale.md, "
        "scale.png; docs/SCALE.md)",
    )
    parser.add_argument(
        "--policies",
        action="store_true",
        help="bench every expressible remat policy per framework instead of the depth sweep "
        "(at L=8 unless --depths): bench-policies.json, .md and .png with a time-memory plot",
    )
    parser.add_argument(
        "--schedules",
        action="store_true",
        help="bench every expressible remat schedule per framework against its analytic model "
        "and Revolve's optimum (L = 1 to 64 unless --depths; 5 repeats unless --repeats): "
        "bench-schedules.json, .md and .png (docs/SCHEDULES.md); "
        + "; ".join(
            f"{name} runs only when named: {why}" for name, why in SCHEDULES_OPT_IN.items()
        ),
    )
    parser.add_argument(
        "--profile",
        choices=("default", "thorough"),
        default="default",
        help="with --schedules: thorough adds L = 128 and 256",
    )


def settings_from(args: argparse.Namespace) -> Settings:
    """The sweep's settings: the defaults, overridden by the command line."""

    def given(value, default):  # None: not given (0 cannot pass the flags' types)
        return default if value is None else value

    repeats = given(args.repeats, DEFAULTS.repeats)
    return Settings(
        depths=tuple(args.depths) if args.depths else DEFAULTS.depths,
        batch=given(args.batch, DEFAULTS.batch),
        features=given(args.features, DEFAULTS.features),
        repeats=repeats,
        max_repeats=given(args.max_repeats, max(DEFAULTS.max_repeats, repeats)),
        seed=given(args.seed, DEFAULTS.seed),
    )


def validate(args: argparse.Namespace) -> None:
    """The flags together: `--max-repeats` cannot be below `--repeats`."""
    if args.max_repeats is not None:
        repeats = DEFAULTS.repeats if args.repeats is None else args.repeats
        if args.max_repeats < repeats:
            raise arguments.UsageError(
                f"--max-repeats must be at least --repeats ({repeats}), got {args.max_repeats}"
            )


def run(args: argparse.Namespace) -> int:
    """Run the bench and write `bench.json`, `bench.md` and `bench.png` into `args.out`."""
    if getattr(args, "scale", False):
        return _run_scale(args)

    console = terminal_style.console(stderr=True)
    settings = settings_from(args)
    if args.policies:
        return bench_policies.command(args, settings)
    if args.schedules:
        return bench_schedules.command(args, settings)
    frameworks, skipped = load_frameworks(args.framework or list(DEFAULT_FRAMEWORKS))
    interrupts.check()  # a signal during an import may have been taken for a missing framework
    for name, reason in skipped.items():
        console.print(f"[yellow]skip[/] {name}: {reason}")
    report = BenchReport(settings, skipped=skipped)
    report.versions = {name: module.versions() for name, module in frameworks.items()}
    report.load["before"] = load_average()
    started = time.perf_counter()
    # A bar on a terminal, a line every few seconds off one (a log is never silent for long).
    with Steps(console, "bench", total_steps(settings, frameworks)) as steps:
        report.results = sweep(
            settings,
            frameworks,
            progress=lambda description, advance: (
                interrupts.check(),  # a framework's import may have swallowed a signal
                steps.update(advance, description),
            ),
        )
    report.seconds = time.perf_counter() - started
    report.load["after"] = load_average()

    args.out.mkdir(parents=True, exist_ok=True)
    data = report.to_json()
    outputs.write_text(args.out / "bench.json", dumps(data) + "\n")  # whole or not at all
    outputs.write_text(args.out / "bench.md", render.markdown(report))
    written = [args.out / "bench.json", args.out / "bench.md"]
    if args.csv is not None:
        written.append(csv_files.write_bench(args.csv, data))
    plotted = render.plot(report, args.out / "bench.png")
    if plotted is None:
        written.append(args.out / "bench.png")
    else:
        console.print(f"[yellow]no plot[/]: {plotted}")
    if args.json:
        print(dumps(data))
        warning = load_warning(report.load)  # the table's own warning is not printed
        if warning:
            console.print(f"[yellow]warning[/]: {warning}")
    else:
        render.print_report(report, terminal_style.console())
    # The last line: what ran, the time and the load in words, what it wrote.
    frameworks_said = f"{len(frameworks)} framework{'s' if len(frameworks) != 1 else ''}"
    console.print(
        f"bench: {len(report.results)} measurements of {frameworks_said} · "
        f"{report.seconds:.0f}s wall, {load_text(report.load)} · wrote "
        + ", ".join(str(p) for p in written),
        highlight=False,
    )
    return 0


def _run_scale(args: argparse.Namespace) -> int:
    """The scaling bench (`conformance.benchmark.scale`), written into `args.out`."""
    import json

    console = terminal_style.console(stderr=True)
    settings = scale.ScaleSettings()
    engines = list(manifests.sharded())
    started = time.perf_counter()
    # A bar on a terminal, a line every ten seconds off one: each run starts its ranks.
    with Steps(console, "bench --scale", len(engines) * len(settings.runs())) as steps:
        # A run is said as it starts: the one before it has ended.
        rows, failed = scale.run(
            settings, engines, lambda text: steps.update(1 if steps.latest else 0, text)
        )
    args.out.mkdir(parents=True, exist_ok=True)
    data = scale.report_data(rows, settings, failed, time.perf_counter() - started)
    outputs.write_text(args.out / "scale.json", json.dumps(data, indent=1) + "\n")
    table = scale.markdown(rows, settings, failed)
    outputs.write_text(args.out / "scale.md", table)
    why = scale.plot(rows, args.out / "scale.png")
    if why:
        console.print(f"[yellow]no plot[/]: {why}")
    if args.json:
        print(json.dumps(data))
    else:  # a rich table on a terminal, aligned text off one; the Markdown is in scale.md
        from ..tables.kinds import scale as scale_tables
        from ..tables.render.terminal import print_document

        print_document(terminal_style.console(), scale_tables.document(data))
    console.print(scale_verdict(len(rows), failed, data["seconds"], args.out), highlight=False)
    return 1 if failed else 0


def scale_verdict(measured: int, failed: dict[str, str], seconds: float, out) -> str:
    """`bench --scale`'s last line: passed or failed, with what ran and where it wrote."""
    said = f"{measured} rows · {seconds:.0f}s wall · wrote {out}"
    if failed:
        runs = ", ".join(failed)
        return f"[red]bench --scale failed[/]: {len(failed)} runs failed ({runs}) · {said}"
    if not measured:
        return f"[yellow]bench --scale measured nothing[/]: no sharded port is installed · {said}"
    return f"[green]bench --scale passed[/]: {said}"
