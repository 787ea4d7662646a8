"""`python -m conformance bench`: memory and time of an L-block stack against L, per framework.

Each framework has one module here (`jax_stack`, `torch_stack`,
`tensorflow_stack`), imported
only when the bench runs; a framework that is not installed is skipped with
the reason. Every module offers the same three things:

- `FRAMEWORK`, its name, and `versions()`;
- `configurations()`: the `(variant, mode)` pairs it runs;
- `build(variant, mode, data)`: a `measure.Case` on the given `measure.Data`.

`measure` sweeps the depths and times the cases interleaved; `render` writes
the JSON, the Markdown table and the plot.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .. import timing
from . import measure
from .measure import Result, Settings

FRAMEWORKS = {
    "jax": "conformance.bench.jax_stack",
    "torch": "conformance.bench.torch_stack",
    "tensorflow": "conformance.bench.tensorflow_stack",
}
DEFAULTS = Settings()


@dataclass
class BenchReport:
    """A whole sweep: its settings, one `Result` per configuration and depth, what was skipped."""

    settings: Settings
    results: list[Result] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    versions: dict[str, dict[str, str]] = field(default_factory=dict)
    seconds: float = 0.0
    # The 1-minute load average before and after: other processes make times noisy.
    load: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": {
                "depths": list(self.settings.depths),
                "batch": self.settings.batch,
                "features": self.settings.features,
                "repeats": self.settings.repeats,
                "seed": self.settings.seed,
            },
            "definitions": measure.DEFINITIONS,
            "modes": measure.MODE_TITLES,
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "load_average_1min": self.load,
            },
            "versions": self.versions,
            "skipped": self.skipped,
            "wall_seconds": self.seconds,
            "results": [r.to_json() for r in self.results],
        }


def load_frameworks(names: Iterable[str]) -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Import each named framework's module. **Returns:** `(loaded, skipped: name -> reason)`."""
    loaded, skipped = {}, {}
    for name in names:
        if name not in FRAMEWORKS:
            skipped[name] = f"no bench for {name!r}; known: {', '.join(FRAMEWORKS)}"
            continue
        try:
            loaded[name] = importlib.import_module(FRAMEWORKS[name])
        except ImportError as error:  # ModuleNotFoundError, or a module set to None
            skipped[name] = f"not installed ({error})"
    return loaded, skipped


def total_steps(settings: Settings, frameworks: dict[str, ModuleType]) -> int:
    """Progress units of a sweep: one per case measured, one per timed sample."""
    cases = sum(len(module.configurations()) for module in frameworks.values())
    return len(settings.depths) * cases * (1 + settings.repeats)


def run(
    settings: Settings,
    frameworks: dict[str, ModuleType],
    *,
    progress: Callable[[str, int], None] | None = None,
) -> list[Result]:
    """Sweep the depths: measure every configuration, then time them interleaved.

    `progress(description, advance)` hears what runs now (advance 0) and
    each finished progress unit (advance 1; `total_steps` of them).
    """
    notify = progress or (lambda description, advance: None)
    results: list[Result] = []
    for depth in settings.depths:
        data = measure.make_data(settings, depth)
        cases, depth_results = [], []
        for module in frameworks.values():
            for variant, mode in module.configurations():
                case = module.build(variant, mode, data)
                notify(f"L={depth} {measure.label(case.framework, variant, mode)}", 0)
                depth_results.append(measure.result_of(case, case.measure(), depth, settings))
                cases.append(case)
                notify("", 1)
        notify(f"L={depth} timing, interleaved", 0)
        samples = timing.time_interleaved(
            [case.step for case in cases],
            settings.repeats,
            on_sample=lambda: notify("", 1),
            seed=settings.seed + depth,
        )
        measure.attach_timings(depth_results, samples)
        results.extend(depth_results)
        del cases  # free this depth's compiled programs and arrays before the next
    return results


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not on every platform
        return float("nan")


def settings_from(args: argparse.Namespace) -> Settings:
    """The sweep's settings: the defaults, overridden by the command line."""
    return Settings(
        depths=tuple(args.depths) if args.depths else DEFAULTS.depths,
        batch=args.batch or DEFAULTS.batch,
        features=args.features or DEFAULTS.features,
        repeats=args.repeats or DEFAULTS.repeats,
        seed=DEFAULTS.seed if args.seed is None else args.seed,
    )


def main(args: argparse.Namespace) -> int:
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

    from . import render

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
    report.load["before"] = _load()
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
        report.results = run(
            settings,
            frameworks,
            progress=lambda description, advance: bar.update(
                task, advance=advance, **({"description": description} if description else {})
            ),
        )
    report.seconds = time.perf_counter() - started
    report.load["after"] = _load()

    args.out.mkdir(parents=True, exist_ok=True)
    data = report.to_json()
    (args.out / "bench.json").write_text(json.dumps(data, indent=2) + "\n")
    (args.out / "bench.md").write_text(render.markdown(report))
    written = [args.out / "bench.json", args.out / "bench.md"]
    plotted = render.plot(report, args.out / "bench.png")
    if plotted is None:
        written.append(args.out / "bench.png")
    else:
        console.print(f"[yellow]no plot[/]: {plotted}")
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        render.print_report(report, Console())
    console.print(
        f"bench: {report.seconds:.0f}s wall · wrote " + ", ".join(str(p) for p in written)
    )
    return 0
