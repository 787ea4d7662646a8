"""`python -m conformance bench --policies`: every expressible remat policy per framework,
its table, JSON and time-memory plot (`conformance.benchmark.policies`)."""

from __future__ import annotations

from typing import Any

from .. import outputs
from ..benchmark import DEFAULT_FRAMEWORKS, load_average, load_frameworks
from ..benchmark.measure import Settings
from ..benchmark.policies import (
    DEPTHS,
    markdown,
    report_data,
    run,
    total_steps,
    with_policies,
)
from ..benchmark.policy_plot import plot
from ..jsonable import dumps, to_data
from ..running import interrupts
from ..tables.kinds.bench_policies import document
from ..tables.render.terminal import print_document
from ..terminal import style as terminal_style
from ..terminal.progress import Steps


def load_text(load: dict[str, float], cores: int | None = None) -> str:
    """The load average before and after, as words, against the cores ("load 6.45 before,
    7.10 after, of 2 cores"); `cores`: this machine's unless given."""
    import os

    said = [f"{load[when]:.2f} {when}" for when in ("before", "after") if when in load]
    cores = cores or os.cpu_count()
    of = f", of {cores} cores" if cores else ""
    return "load " + ", ".join(said) + of if said else "load unknown"


def command(args: Any, settings: Settings) -> int:
    """Run the policy bench and write `bench-policies.json`, `.md` and `.png` into `args.out`."""
    import time

    console = terminal_style.console(stderr=True)
    if not args.depths:  # one depth unless asked: the policies, not the depths, vary here
        settings = Settings(**{**to_data(settings), "depths": DEPTHS})
    named = args.framework or list(DEFAULT_FRAMEWORKS)
    frameworks, skipped = load_frameworks(named)
    frameworks, without = with_policies(frameworks)
    skipped.update(without)
    interrupts.check()
    for name, reason in skipped.items():
        console.print(f"[yellow]skip[/] {name}: {reason}")
    load = {"before": load_average()}
    started = time.perf_counter()
    with Steps(console, "bench --policies", total_steps(settings, frameworks)) as steps:
        results, failed = run(
            settings,
            frameworks,
            progress=lambda description, advance: (
                interrupts.check(),
                steps.update(advance, description),
            ),
        )
    seconds = time.perf_counter() - started
    load["after"] = load_average()
    args.out.mkdir(parents=True, exist_ok=True)
    data = report_data(
        settings, frameworks, results, failed, skipped=skipped, load=load, seconds=seconds
    )
    table = markdown(data)
    outputs.write_text(args.out / "bench-policies.json", dumps(data) + "\n")
    outputs.write_text(args.out / "bench-policies.md", table)
    why = plot(results, args.out / "bench-policies.png", "remat policies: time against memory")
    if why is not None:
        console.print(f"[yellow]no plot[/]: {why}")
    if args.json:
        print(dumps(data))
    else:  # a rich table on a terminal, aligned text off one; the Markdown is in the file
        print_document(terminal_style.console(), document(data))
    verdict = (
        f"[red]bench --policies failed[/]: {len(failed)} failed to run"
        if failed
        else f"[green]bench --policies passed[/]: {len(results)} policy cases measured"
        if results
        else "[yellow]bench --policies measured nothing[/]: every framework skipped"
    )
    console.print(
        f"{verdict} · {seconds:.0f}s wall, {load_text(load)} · wrote {args.out}",
        highlight=False,
    )
    return 1 if failed else 0
