"""`python -m conformance bench`: memory and time of an L-block stack against L, per framework.

Each stack declares its bench modules in its manifest (`implementations.manifests.BenchEntry`);
they are imported only when the bench runs, in an order that lets them share the process
(the manifests' `load_first`); a framework that is not installed is skipped with the reason.
What every module offers is `implementations.bench_case`'s docstring.

`measure` sweeps the depths and times the cases interleaved; `render` writes
the JSON, the Markdown table and the plot. Called, `conformance.benchmark(...)` is
`conformance.api.bench` (the Python API).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from implementations import collector, manifests
from implementations.contract import StackUnavailable
from implementations.measuring import driver

from ..jsonable import to_data
from ..running import interrupts, timing
from ..terminal import noise
from . import measure, targets
from .isolated import IsolatedStack
from .measure import Result, Settings

#: Every bench stack (its manifest's entry): name -> its module.
FRAMEWORKS = {e.name: e.module for m in manifests.manifests() for e in m.bench}
#: Run only when named (`--framework NAME`): each entry says why.
OPT_IN = {e.name: e.why for m in manifests.manifests() for e in m.bench if e.opt_in}
#: The stack (manifest) of each bench stack, for the order they load in.
_STACK_OF = {e.name: m for m in manifests.manifests() for e in m.bench}
#: Bench stacks that hold process-wide state: each runs in a process of its own.
ISOLATED = frozenset(e.name for m in manifests.manifests() for e in m.bench if e.isolated)
DEFAULT_FRAMEWORKS = tuple(name for name in FRAMEWORKS if name not in OPT_IN)
#: `bench --schedules` runs these only when named, each entry says why.
SCHEDULES_OPT_IN = {
    e.name: e.schedules_opt_in for m in manifests.manifests() for e in m.bench if e.schedules_opt_in
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
            "kind": "bench",
            "settings": to_data(self.settings),
            "definitions": measure.definitions(),
            "modes": measure.mode_titles(),
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
            "saved_target": measure.SAVED_TARGET,
            "targets": targets.targets(self.results, self.settings.target_spread),
        }


def with_targets(data: dict[str, Any]) -> dict[str, Any]:
    """`bench.json`'s data with its `targets` (and `saved_target`), worked out from its
    results where it was written without them."""
    if "targets" in data:
        return data
    report = from_json(data)
    found = targets.targets(report.results, report.settings.target_spread)
    return {**data, "saved_target": measure.SAVED_TARGET, "targets": found}


def from_json(data: dict[str, Any]) -> BenchReport:
    """A `BenchReport` back from its JSON (`bench.json`), for the report and the plot.

    Raises `ValueError` naming what is missing when `data` is not a bench report.
    """
    missing = [key for key in ("settings", "results") if key not in data]
    if missing:
        raise ValueError(f"not a bench report: no {', '.join(missing)}")
    known = {f.name for f in dataclasses.fields(Settings)}
    settings = {k: v for k, v in data["settings"].items() if k in known}
    settings["depths"] = tuple(settings.get("depths", DEFAULTS.depths))
    result_fields = {f.name for f in dataclasses.fields(Result)}
    results = [
        Result(**{k: v for k, v in r.items() if k in result_fields}) for r in data["results"]
    ]
    return BenchReport(
        Settings(**settings),
        results,
        skipped=dict(data.get("skipped", {})),
        versions=dict(data.get("versions", {})),
        seconds=float(data.get("wall_seconds", 0.0)),
        load=dict(data.get("machine", {}).get("load_average_1min", {})),
    )


def load_frameworks(names: Iterable[str]) -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Import each named framework's module, those whose stack must load first first (the
    manifests' `load_first`: some frameworks cannot load after others in one process).

    **Returns:** `(loaded, skipped: name -> reason)`, `loaded` in the order named.
    """
    names = list(dict.fromkeys(names))
    order = manifests.load_order(names, _STACK_OF.get)
    found, skipped = {}, {}
    # Off while they load, and what they loaded frozen out of its scans after: loading the
    # default bench's frameworks took 7.0 CPU-s with it on, 5.2 so.
    with collector.paused(freeze=True):
        _load_in_order(order, found, skipped)
    loaded = {name: found[name] for name in names if name in found}
    return loaded, {name: skipped[name] for name in names if name in skipped}


def _load_in_order(order: list[str], found: dict, skipped: dict) -> None:
    """Load each framework's bench module into `found`, or say in `skipped` why not."""
    for name in order:
        if name not in FRAMEWORKS:
            skipped[name] = f"no bench for {name!r}; known: {', '.join(FRAMEWORKS)}"
            continue
        try:
            # What a framework prints as it loads goes to the log of its output (DeepSpeed
            # logs to stdout; `terminal.noise`), else stderr: stdout is the report's (`bench
            # --json`). A signal waits for the import's end.
            sink = noise.sink()
            with (
                interrupts.deferred(),
                contextlib.redirect_stdout(sink),
                contextlib.redirect_stderr(sink),
            ):
                if name in ISOLATED:
                    found[name] = IsolatedStack(FRAMEWORKS[name])
                else:
                    found[name] = driver.bench_module(FRAMEWORKS[name])
        except StackUnavailable as error:  # installed, but not loadable in this process
            skipped[name] = f"cannot load in this process ({error})"
        except ImportError as error:  # ModuleNotFoundError, or a module set to None
            skipped[name] = f"not installed ({error})"


def most_samples(settings: Settings) -> int:
    """The most timed samples a case gets at one depth: rounds of `repeats` while they stay
    within `max_repeats` (`run` stops sooner once every spread is within the target)."""
    return max(1, settings.max_repeats // settings.repeats) * settings.repeats


def total_steps(settings: Settings, frameworks: dict[str, ModuleType]) -> int:
    """Progress units of a sweep: one per case measured, one per timed sample it may take
    (`most_samples`; rounds a depth does not need are counted done when it settles)."""
    cases = sum(len(module.configurations()) for module in frameworks.values())
    return len(settings.depths) * cases * (1 + most_samples(settings))


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
                result = measure.result_of(case, case.measure(), depth, settings)
                result.time_target_every_depth = getattr(module, "TIME_TARGET_EVERY_DEPTH", None)
                depth_results.append(result)
                cases.append(case)
                notify("", 1)
        notify(f"L={depth} timing, interleaved", 0)
        samples = [[] for _ in cases]
        rounds = 0
        # More rounds of interleaved samples until every ratio's spread is
        # within the target (or the repeats run out): noise of +-15% would
        # otherwise read as a 0.9x "overhead".
        while True:
            more = timing.time_interleaved(
                [case.step for case in cases],
                settings.repeats,
                on_sample=lambda: notify("", 1),
                seed=settings.seed + depth + rounds,
            )
            rounds += 1
            samples = [old + new for old, new in zip(samples, more, strict=True)]
            measure.attach_timings(depth_results, samples)
            spreads = [r.time_ratio_spread for r in depth_results if r.time_ratios]
            settled = all(s is not None and s <= settings.target_spread for s in spreads)
            if settled or len(samples[0]) + settings.repeats > settings.max_repeats:
                # The rounds it did not need, counted done: the count reaches its total.
                taken = len(samples[0]) if samples else most_samples(settings)
                notify("", (most_samples(settings) - taken) * len(cases))
                break
            notify(f"L={depth} timing, more repeats (spread over target)", 0)
        results.extend(depth_results)
        del cases  # free this depth's compiled programs and arrays before the next
    return results


def load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:  # not on every platform
        return float("nan")
