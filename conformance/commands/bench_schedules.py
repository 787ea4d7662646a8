"""`python -m conformance bench --schedules`: where to recompute, per framework, against the
analytic model and Revolve's optimum: its table, JSON and pictures
(`conformance.benchmark.schedules`)."""

from __future__ import annotations

from typing import Any

from .. import outputs
from ..benchmark import DEFAULT_FRAMEWORKS, SCHEDULES_OPT_IN, load_average, load_frameworks
from ..benchmark.measure import Settings
from ..benchmark.schedule_plot import plot
from ..benchmark.schedules import (
    BATCH,
    DEPTHS,
    FEATURES,
    REPEATS,
    THOROUGH_DEPTHS,
    not_checked,
    report_data,
    run,
    total_steps,
    unexplained,
    with_schedules,
)
from ..jsonable import dumps, to_data
from ..running import interrupts
from ..tables.kinds import bench_schedules as schedule_tables
from ..tables.render import markdown as markdown_render
from ..tables.render.terminal import print_document
from ..terminal import style as terminal_style
from ..terminal.progress import Steps
from .bench_policies import load_text


def settings_for(args: Any, settings: Settings) -> Settings:
    """The sweep's depths (the profile's unless `--depths`), repeats (`REPEATS` unless
    `--repeats`), batch and width (`BATCH`, `FEATURES` unless `--batch`, `--features`): the
    schedules, not the timing, are what this bench compares."""
    depths = tuple(args.depths) if args.depths else None
    if depths is None:
        depths = THOROUGH_DEPTHS if getattr(args, "profile", None) == "thorough" else DEPTHS
    repeats = args.repeats or REPEATS
    batch = args.batch or BATCH  # a quarter of the depth bench's: the ratios do not depend on B
    features = args.features or FEATURES
    return Settings(
        **{
            **to_data(settings),
            "depths": depths,
            "repeats": repeats,
            "batch": batch,
            "features": features,
            "max_repeats": max(repeats, settings.max_repeats),
        }
    )


def chosen(named: list[str] | None) -> tuple[list[str], dict[str, str]]:
    """The frameworks the sweep runs (those named, else the defaults less
    `SCHEDULES_OPT_IN`), and those it leaves out, with why."""
    if named:
        return list(named), {}
    left_out = {name: f"runs only when named: {why}" for name, why in SCHEDULES_OPT_IN.items()}
    return [n for n in DEFAULT_FRAMEWORKS if n not in left_out], left_out


def command(args: Any, settings: Settings) -> int:
    """Run the schedule bench; write `bench-schedules.json`, `.md` and `.png` into `args.out`.
    Exits 1 if a case failed to run or departs from the model unexplained."""
    import time

    console = terminal_style.console(stderr=True)
    settings = settings_for(args, settings)
    named, left_out = chosen(args.framework)
    frameworks, skipped = load_frameworks(named)
    skipped.update(left_out)
    frameworks, without = with_schedules(frameworks)
    skipped.update(without)
    interrupts.check()
    for name, reason in skipped.items():
        console.print(f"[yellow]skip[/] {name}: {reason}")
    load = {"before": load_average()}
    started = time.perf_counter()
    # A bar on a terminal, a line every ten seconds off one (it runs for minutes).
    total = total_steps(settings.depths, frameworks, settings.repeats)
    with Steps(console, "bench --schedules", total) as steps:
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
    document = schedule_tables.document(data)
    outputs.write_text(args.out / "bench-schedules.json", dumps(data) + "\n")
    outputs.write_text(args.out / "bench-schedules.md", markdown_render.document(document))
    why = plot(data, args.out / "bench-schedules.png")
    if why is not None:
        console.print(f"[yellow]no plot[/]: {why}")
    if args.json:
        print(dumps(data))
    else:  # the shared renderer: a rich table on a terminal, aligned text off one
        print_document(terminal_style.console(), document)
    for why, count in not_checked(results).items():  # a check that could not run: said
        console.print(f"[yellow]values of {count} of {len(results)} rows {why}[/]")
    off = unexplained(results)
    for r in off:
        console.print(
            f"[red]✗[/] L={r.depth} {r.framework} · {r.schedule}: {'; '.join(r.unexplained_flags)}"
        )
    unchecked = sum(not_checked(results).values())
    unseen = not_observed(results)
    console.print(
        verdict(len(results), off, failed, seconds, load, args.out, unchecked, unseen),
        highlight=False,
    )
    return 1 if failed or off else 0


def not_observed(results: list) -> int:
    """Rows whose forward matmuls or peak the instrument could not observe (the table's
    notes say why): their counts were not held to the model, so they never count as checked."""
    return sum(r.forward_matmuls is None or r.peak_bytes is None for r in results)


def verdict(
    measured: int,
    off: list,
    failed: dict,
    seconds: float,
    load: dict,
    out,
    unchecked: int = 0,
    unseen: int = 0,
) -> str:
    """The last line: passed or failed, and why, with the wall time and the load in words,
    how many rows' values could not be checked and how many rows' counts or peak were not
    observable (the lines above and the table's notes say why)."""
    said = f"{seconds:.0f}s wall, {load_text(load)} · wrote {out}"
    if unseen:
        said = f"counts or peak of {unseen} of {measured} rows not observable · {said}"
    if unchecked:
        said = f"values of {unchecked} of {measured} rows not checked · {said}"
    if off or failed:
        why = f"{len(off)} unexplained against the model, {len(failed)} failed to run"
        return f"[red]bench --schedules failed[/]: {why} · {said}"
    if not measured:  # said, never a pass (the exit code is the command's own)
        return f"[yellow]bench --schedules measured nothing[/]: every framework skipped · {said}"
    passed = f"{measured} cases, none off the model unexplained"
    return f"[green]bench --schedules passed[/]: {passed} · {said}"
