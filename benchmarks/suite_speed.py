"""How fast the suite checks one port, and where each example's time goes.

Runs the default run's work for one port (every property, the ci profile's
examples, in this process) and prints examples per second and the split of
an example's time:

- **drawing**: Hypothesis choosing and building the case (or loading it
  from the example bank);
- **port**: the port's own contract calls;
- **canonical**: the canonical port's calls (or loading its stored results);
- **bounds**: the error analysis (`conformance.tolerance`);
- **rest**: comparing, bookkeeping.

Usage: `python benchmarks/suite_speed.py PORT [PORT ...] [--examples N] [--json]`.
Run it twice to see a warm cache (the second run reuses JAX's compilation
cache and the suite's example bank and stored canonical results).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from contextlib import contextmanager

from conformance import environment, profiles

PARTS = ("drawing", "port", "canonical", "bounds", "rest")
TOLERANCE_FUNCTIONS = ("forward_bound", "analyse_forward", "analyse_vjp", "vjp_comparison")


class Clock:
    """Seconds spent per part; nested parts are charged to the innermost one."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[tuple[str, float]] = []

    @contextmanager
    def part(self, name: str):
        now = time.perf_counter()
        if self._stack:  # pause the enclosing part
            outer, since = self._stack[-1]
            self.seconds[outer] += now - since
        self._stack.append((name, now))
        try:
            yield
        finally:
            name, since = self._stack.pop()
            now = time.perf_counter()
            self.seconds[name] += now - since
            if self._stack:
                outer, _ = self._stack[-1]
                self._stack[-1] = (outer, now)


class Timed:
    """An implementation whose calls are charged to a part of the clock."""

    def __init__(self, implementation, part: str, clock: Clock):
        self._implementation, self._part, self._clock = implementation, part, clock

    def __getattr__(self, name):
        value = getattr(self._implementation, name)
        if not callable(value):
            return value

        def timed(*args, **kwargs):
            with self._clock.part(self._part):
                return value(*args, **kwargs)

        return timed


def measure(name: str, examples: int | None) -> dict:
    """One port's whole property run, timed by part."""
    import implementations
    from conformance import properties, runner

    clock = Clock()
    for function in TOLERANCE_FUNCTIONS:  # charge the error analysis to "bounds"
        if hasattr(properties, function):
            original = getattr(properties, function)

            def timed(*args, _original=original, **kwargs):
                with clock.part("bounds"):
                    return _original(*args, **kwargs)

            setattr(properties, function, timed)
    started = time.perf_counter()
    port = implementations.load(name)
    port.pin_matmul_precision()
    canonical = implementations.load(implementations.CANONICAL)
    loaded = time.perf_counter() - started
    count = 0

    def on_example(text: str) -> None:
        nonlocal count
        count += 1

    begun = time.perf_counter()
    for prop in properties.PROPERTIES:
        if name == implementations.CANONICAL and prop.needs_canonical:
            continue
        outcome = runner.run_property(
            prop,
            Timed(port, "port", clock),
            lambda: Timed(canonical, "canonical", clock),
            max_examples=examples,
            on_example=on_example,
            timing=clock,
        )
        assert outcome.status == "pass", outcome.message
    total = time.perf_counter() - begun
    parts = {part: clock.seconds.get(part, 0.0) for part in PARTS if part != "rest"}
    parts["rest"] = total - sum(parts.values())
    return {
        "port": name,
        "examples": count,
        "seconds": total,
        "load_seconds": loaded,
        "examples_per_second": count / total,
        "ms_per_example": {part: 1e3 * s / count for part, s in parts.items()},
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
