"""How fast the suite checks one port, and where each example's time goes.

Runs the default run's work for one port (every property, the ci profile's
examples, in this process) and prints examples per second and the split of
an example's time:

- **drawing**: getting the case: Hypothesis choosing and building it, or
  reading it from the example bank;
- **port**: the port's own contract calls;
- **canonical**: the canonical port's calls, and reading its stored results;
- **bounds**: the error analysis (`conformance.checking.tolerance`);
- **rest**: comparing, bookkeeping.

Usage: `python benchmarks/suite_speed.py PORT [PORT ...] [--examples N] [--json]`.
Run it twice to see a warm cache (the second run reuses JAX's compilation
cache, and the example bank's cases and canonical results). It times the
properties by wrapping them, and so runs on older versions of the suite
too: copy it into an older checkout to compare, in one sitting.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import time
from collections import defaultdict
from contextlib import contextmanager

from conformance.running import environment, profiles

PARTS = ("drawing", "port", "canonical", "bounds", "rest")
TOLERANCE_FUNCTIONS = ("forward_bound", "analyse_forward", "analyse_vjp", "vjp_comparison")


class Clock:
    """Seconds spent per part; nested parts are charged to the innermost one."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[list] = []

    @contextmanager
    def part(self, name: str):
        now = time.perf_counter()
        if self._stack:  # pause the enclosing part
            self.seconds[self._stack[-1][0]] += now - self._stack[-1][1]
        self._stack.append([name, now])
        try:
            yield
        finally:
            name, since = self._stack.pop()
            now = time.perf_counter()
            self.seconds[name] += now - since
            if self._stack:
                self._stack[-1][1] = now

    def timed(self, function, part: str):
        def timed(*args, **kwargs):
            with self.part(part):
                return function(*args, **kwargs)

        return timed


class Timed:
    """An implementation whose calls are charged to a part of the clock."""

    def __init__(self, implementation, part: str, clock: Clock):
        self._implementation, self._part, self._clock = implementation, part, clock

    def __getattr__(self, name):
        value = getattr(self._implementation, name)
        return self._clock.timed(value, self._part) if callable(value) else value


def timed_properties(clock: Clock) -> list:
    """The suite's properties, their checks charged to "rest" and the error analysis to
    "bounds" (and, where a property has one, its canonical side to "canonical")."""
    from conformance.checking import properties

    for function in TOLERANCE_FUNCTIONS:
        if hasattr(properties, function):
            setattr(properties, function, clock.timed(getattr(properties, function), "bounds"))
    timed = []
    for prop in properties.PROPERTIES:
        changes = {"check": clock.timed(prop.check, "rest")}
        if getattr(prop, "prepare", None) is not None:
            changes["prepare"] = clock.timed(prop.prepare, "canonical")
        timed.append(dataclasses.replace(prop, **changes))
    return timed


def measure(name: str, examples: int | None) -> dict:
    """One port's whole property run, timed by part."""
    import implementations
    from conformance.running import runner

    clock = Clock()
    started = time.perf_counter()
    port = implementations.load(name)
    port.pin_matmul_precision()
    canonical = implementations.load(implementations.CANONICAL)
    loaded = time.perf_counter() - started
    # The canonical argument became a loader when the example bank came in.
    takes_loader = "on_prepare" in inspect.signature(runner.run_property).parameters
    timed_canonical = Timed(canonical, "canonical", clock)
    count = 0

    def on_example(*text: str) -> None:  # older versions pass no description
        nonlocal count
        count += 1

    begun = time.perf_counter()
    for prop in timed_properties(clock):
        if name == implementations.CANONICAL and prop.needs_canonical:
            continue
        outcome = runner.run_property(
            prop,
            Timed(port, "port", clock),
            (lambda: timed_canonical) if takes_loader else timed_canonical,
            max_examples=examples,
            on_example=on_example,
        )
        assert outcome.status == "pass", outcome.message
    total = time.perf_counter() - begun
    parts = {part: clock.seconds.get(part, 0.0) for part in PARTS if part != "drawing"}
    parts["drawing"] = total - sum(parts.values())  # whatever is not a check: getting cases
    return {
        "port": name,
        "examples": count,
        "seconds": total,
        "load_seconds": loaded,
        "examples_per_second": count / total,
        "ms_per_example": {part: 1e3 * parts[part] / count for part in PARTS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ports", nargs="+")
    parser.add_argument("--examples", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    environment.prepare()
    profiles.load("ci")
    results = [measure(name, args.examples) for name in args.ports]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        split = " · ".join(f"{p} {r['ms_per_example'][p]:.1f}" for p in PARTS)
        print(
            f"{r['port']:16} {r['examples']:4} examples in {r['seconds']:5.1f} s "
            f"({r['examples_per_second']:5.1f}/s; load {r['load_seconds']:.1f} s) · "
            f"ms per example: {split}"
        )


if __name__ == "__main__":
    main()
