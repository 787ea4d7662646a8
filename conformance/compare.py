"""`python -m conformance compare`: every port side by side, on one seed and one shape.

For each available port, against the canonical one on shared parameters:

- **accuracy:** the largest `|difference|` of the output and of every
  gradient, next to the tolerance model's bound at that element, and the
  worst difference/bound ratio (1.0 would fail the suite);
- **residuals:** what the backward pass keeps with the checkpoint off and on,
  from the port's own instrument (`backward_record`);
- **time:** the warm per-call time of `nn_checkpoint_forward` and of a VJP,
  medians of interleaved samples, and the first-call time (import, then the
  first forward and VJP: tracing and compiling), measured in a fresh
  process per port with JAX's persistent compilation cache turned off, since
  in-process or on-disk caches would hide it;
- **versions** of the frameworks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import implementations
from implementations.contract import BackwardRecord, Implementation, Params, SavedTensor

from . import environment
from .properties import INIT_ULPS
from .timing import time_interleaved
from .tolerance import forward_bound, vjp_comparison

FIRST_CALL_TIMEOUT = 600.0


@dataclass
class Diff:
    """The largest difference from the canonical, and the bound at that element.

    **Arguments:**

    - `max_abs`: `max |port - canonical|` (after any relu-kink shift).
    - `bound`: the tolerance model's bound at the element of `max_abs`.
    - `worst_ratio`: `max |difference| / bound` over all elements; above 1 fails.
    """

    max_abs: float
    bound: float
    worst_ratio: float


@dataclass
class Residuals:
    """What the backward pass keeps, from the port's instrument, checkpoint off or on.

    `count` and `bytes` leave parameters out, as `BackwardRecord.saved_bytes`
    does: they live whether or not anything is saved. `saved` lists them all.
    """

    count: int
    bytes: int
    saved: list[dict[str, Any]]
    recomputed: dict[str, int]
    checkpoint_regions: int | None
    instrument: str


@dataclass
class PortComparison:
    """One port's row."""

    name: str
    state: str  # "available", "unavailable" or "broken"
    reason: str = ""
    framework: str = ""
    reference: bool = False  # the canonical port, compared with itself
    versions: dict[str, str] = field(default_factory=dict)
    output: Diff | None = None  # forward with shared parameters
    exercise: Diff | None = None  # nn_checkpoint_forward, the port's own init
    gradients: dict[str, Diff] = field(default_factory=dict)
    residuals: dict[str, Residuals] = field(default_factory=dict)  # "off", "on"
    warm_forward_seconds: float | None = None
    warm_vjp_seconds: float | None = None
    first_call: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def worst_gradient(self) -> tuple[str, Diff] | None:
        if not self.gradients:
            return None
        return max(self.gradients.items(), key=lambda item: item[1].worst_ratio)


@dataclass
class Comparison:
    """The whole comparison, for the tables and for `--json`."""

    seed: int
    dim: int
    features: int
    canonical: str
    ports: list[PortComparison]
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"] = NOTES
        return data


NOTES = {
    "output": "forward(params, x, checkpoint=True) with the canonical params, against the "
    "canonical port; bound from conformance.tolerance.forward_bound",
    "exercise": "nn_checkpoint_forward(seed, x, features): each port's own init; the bound "
    f"allows {INIT_ULPS} ulps of parameter difference, as the suite does",
    "gradients": "vjp(params, x, cotangent, checkpoint=True), every parameter and x; bound and "
    "relu-kink shift from conformance.tolerance.vjp_comparison",
    "residuals": "backward_record(params, x, checkpoint=off/on): count and bytes leave "
    "parameters out; the list holds everything the instrument saw",
    "warm": "median seconds per call over interleaved samples, after a warm-up call; the "
    "forward is nn_checkpoint_forward on the framework's own x, synchronised by reading "
    "the result back to numpy; the VJP is the contract's vjp (numpy in and out, so it "
    "includes moving the parameters into the framework)",
    "first_call": "a fresh Python process per port, JAX's persistent compilation cache off: "
    "import = loading the port (its framework); forward = the first nn_checkpoint_forward "
    "(init and apply: tracing, compiling, running); vjp = the first contract vjp after it",
}


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def diff(
    actual: np.ndarray, expected: np.ndarray, bound: np.ndarray, shift: np.ndarray | float = 0.0
) -> Diff:
    """Compare two arrays against a per-element bound; a non-finite difference is infinitely bad."""
    actual = np.asarray(actual, np.float64)
    if actual.shape != np.shape(expected):
        return Diff(float("inf"), float("nan"), float("inf"))
    delta = np.abs(actual - np.asarray(expected, np.float64) - shift)
    delta = np.where(np.isfinite(delta), delta, np.inf)
    if delta.size == 0:
        return Diff(0.0, 0.0, 0.0)
    at = np.unravel_index(int(np.argmax(delta)), delta.shape)
    ratio = delta / np.asarray(bound, np.float64)
    return Diff(float(delta[at]), float(np.asarray(bound)[at]), float(np.max(ratio)))


def residuals(record: BackwardRecord) -> Residuals:
    """A `BackwardRecord` as plain data."""
    return Residuals(
        count=len(record.kept),
        bytes=record.saved_bytes,
        saved=[
            {
                "shape": list(t.shape),
                "dtype": t.dtype,
                "origin": t.origin,
                "bytes": t.nbytes,
                "note": t.note,
            }
            for t in record.saved
        ],
        recomputed=dict(record.recomputed),
        checkpoint_regions=record.checkpoint_regions,
        instrument=record.instrument,
    )


def make_inputs(seed: int, dim: int, features: int) -> tuple[np.ndarray, np.ndarray]:
    """x `(D,)` and a cotangent `(F,)`, standard normal float32, from `seed`."""
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal(dim).astype(np.float32),
        rng.standard_normal(features).astype(np.float32),
    )


def compare_port(
    port: Implementation,
    canonical: Implementation,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
) -> PortComparison:
    """Accuracy and residuals of one port (timings are added by the caller)."""
    row = PortComparison(port.name, "available", framework=port.framework, versions=port.versions())
    try:
        row.output = diff(
            port.forward(params, x, checkpoint=True),
            canonical.forward(params, x, checkpoint=True),
            forward_bound(params, x),
        )
        # `params` is the canonical init for this seed: the exercise's own parameters.
        features = params.features
        row.exercise = diff(
            port.to_numpy(port.nn_checkpoint_forward(seed, port.from_numpy(x), features)),
            canonical.to_numpy(
                canonical.nn_checkpoint_forward(seed, canonical.from_numpy(x), features)
            ),
            forward_bound(params, x, param_ulps=INIT_ULPS),
        )
        grads = port.vjp(params, x, cotangent, checkpoint=True).as_dict()
        reference = canonical.vjp(params, x, cotangent, checkpoint=True).as_dict()
        for name, (shift, bound) in vjp_comparison(params, x, cotangent, grads, reference).items():
            row.gradients[name] = diff(grads[name], reference[name], bound, shift)
        for label, on in (("off", False), ("on", True)):
            row.residuals[label] = residuals(port.backward_record(params, x, checkpoint=on))
    except Exception as error:  # a broken port gets a row that says so, not a crash
        row.error = f"{type(error).__name__}: {error}"
    return row


def warm_timings(
    ports: Sequence[Implementation],
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    repeats: int,
) -> list[tuple[float | None, float | None]]:
    """Warm seconds per call of each port's forward and VJP, all interleaved."""
    calls = []
    for port in ports:
        native = port.from_numpy(x)
        # A new seed on every call: a port must not get faster by caching one init.
        seeds = itertools.count(seed)
        calls.append(
            lambda port=port, native=native, seeds=seeds: port.to_numpy(
                port.nn_checkpoint_forward(next(seeds), native, params.features)
            )
        )
        calls.append(lambda port=port: port.vjp(params, x, cotangent, checkpoint=True))
    try:
        medians = [statistics.median(s) for s in time_interleaved(calls, repeats)]
    except Exception:
        return [(None, None)] * len(ports)
    return [(medians[2 * i], medians[2 * i + 1]) for i in range(len(ports))]


# ---------------------------------------------------------------------------
# First call, in a fresh process
# ---------------------------------------------------------------------------


def first_call(name: str, inputs: Path, seed: int) -> dict[str, Any]:
    """Time a port's first use in a new Python process; **returns** its seconds, or an error."""
    env = dict(os.environ)
    # This process's environment.prepare() pointed JAX at the on-disk cache;
    # a warm cache would make a compile look free. Turn it off for the child.
    env[environment.CACHE_ENV] = "off"
    for key in list(env):
        if key.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE")):
            del env[key]
    command = [sys.executable, "-m", "conformance.compare", "--first-call", name, str(inputs)]
    command.append(str(seed))
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=FIRST_CALL_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {FIRST_CALL_TIMEOUT:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {last}"}
    return json.loads(lines[-1])


def _first_call_child(name: str, inputs: str, seed: str) -> None:
    # Runs in the fresh process: load the port, then its first forward and VJP.
    # Prints one JSON line: the seconds of each, or what went wrong.
    environment.prepare()
    data = np.load(inputs)
    params = Params(*(data[k] for k in ("w1", "b1", "w2", "b2")))
    x, cotangent = data["x"], data["cotangent"]
    try:
        started = time.perf_counter()
        port = implementations.load(name)
        port.pin_matmul_precision()
        loaded = time.perf_counter()
        port.to_numpy(port.nn_checkpoint_forward(int(seed), port.from_numpy(x), params.features))
        forward = time.perf_counter()
        port.vjp(params, x, cotangent, checkpoint=True)
        vjp = time.perf_counter()
    except implementations.PortUnavailable as error:
        result = {"error": error.reason}
    except Exception as error:
        result = {"error": f"{type(error).__name__}: {error}"}
    else:
        result = {"import": loaded - started, "forward": forward - loaded, "vjp": vjp - forward}
    print(json.dumps(result))


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------


def run(
    seed: int,
    dim: int,
    features: int,
    names: Sequence[str] | None = None,
    *,
    repeats: int = 9,
    first_calls: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    """Compare the named ports (default: every registered one) with the canonical port."""
    notify = progress or (lambda message: None)
    started = time.perf_counter()
    canonical = implementations.load(implementations.CANONICAL)
    canonical.pin_matmul_precision()
    params = canonical.init_params(seed, dim, features)
    x, cotangent = make_inputs(seed, dim, features)

    rows: list[PortComparison] = []
    loaded: list[Implementation] = []
    for status in implementations.status():
        if names and status.name not in names and status.name != implementations.CANONICAL:
            continue
        if status.state != "available":
            rows.append(PortComparison(status.name, status.state, reason=status.reason))
            continue
        port = implementations.load(status.name)
        port.pin_matmul_precision()
        notify(f"comparing {port.name}")
        rows.append(compare_port(port, canonical, params, x, cotangent, seed))
        rows[-1].reference = port.name == implementations.CANONICAL
        loaded.append(port)

    notify("timing warm calls, interleaved")
    by_name = {row.name: row for row in rows}
    working = [port for port in loaded if not by_name[port.name].error]
    for port, (fwd, vjp) in zip(
        working, warm_timings(working, params, x, cotangent, seed, repeats), strict=True
    ):
        by_name[port.name].warm_forward_seconds = fwd
        by_name[port.name].warm_vjp_seconds = vjp

    if first_calls:
        with tempfile.TemporaryDirectory() as scratch:
            inputs = Path(scratch) / "inputs.npz"
            np.savez(inputs, **params.as_dict(), x=x, cotangent=cotangent)
            for port in loaded:  # one at a time: two compiling processes would share 2 cores
                notify(f"first call of {port.name}, fresh process")
                by_name[port.name].first_call = first_call(port.name, inputs, seed)
    return Comparison(
        seed, dim, features, implementations.CANONICAL, rows, time.perf_counter() - started
    )


def main(args: argparse.Namespace) -> int:
    """Print the comparison (or its JSON); exit 1 if a port is broken or exceeds a bound."""
    from rich.console import Console

    console = Console(stderr=True)
    registered = implementations.registered()
    unknown = [n for n in args.implementation or [] if n not in registered]
    if unknown:
        known = ", ".join(registered)
        console.print(f"error: no port named {', '.join(unknown)}; registered: {known}")
        return 2
    try:
        with console.status("comparing") as status:
            comparison = run(
                args.seed,
                args.dim,
                args.features,
                args.implementation,
                repeats=args.repeats,
                first_calls=not args.no_first_call,
                progress=lambda message: status.update(message),
            )
    except implementations.PortUnavailable as error:
        console.print(f"error: the canonical port is needed to compare: {error.reason}")
        return 2
    if args.json:
        print(json.dumps(comparison.to_json(), indent=2, default=str))
    else:
        print_comparison(comparison, Console())
    return 1 if failed(comparison) else 0


def failed(comparison: Comparison) -> bool:
    """Whether a port is broken, errored, or exceeds a bound."""
    for row in comparison.ports:
        if row.state == "broken" or row.error:
            return True
        diffs = [row.output, row.exercise, *row.gradients.values()]
        if any(d is not None and d.worst_ratio > 1.0 for d in diffs):
            return True
    return False


# ---------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    # Three significant figures at most: these are noisy measurements.
    if value is None:
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.0f}µs"
    if value < 1e-2:
        return f"{value * 1e3:.2f}ms"
    if value < 1:
        return f"{value * 1e3:.0f}ms"
    return f"{value:.2f}s"


def _bytes(value: int) -> str:
    if value < 1024:
        return f"{value} B"
    if value < 2**20:
        return f"{value / 1024:.1f} KiB"
    return f"{value / 2**20:.2f} MiB"


def _diff(d: Diff | None, name: str) -> str:
    # Two lines: the largest difference, then the bound at that element.
    if d is None:
        return f"{name} -"
    colour = "green" if d.worst_ratio <= 1.0 else "bold red"
    return f"{name} [{colour}]{d.max_abs:.1e}[/]\n[dim]≤ {d.bound:.1e}[/]"


def _dtype(name: str) -> str:
    name = name.removeprefix("torch.")
    return {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16"}.get(
        name, name
    )


def residual_list(saved: Sequence[dict[str, Any]]) -> str:
    """Residuals one per line as `(shape) dtype origin`, parameters summed up on one line."""
    lines = [
        f"{tuple(t['shape'])} {_dtype(t['dtype'])} {t['origin']}"
        for t in saved
        if t["origin"] in SavedTensor.KEPT
    ]
    for origin, label in (("parameter", "params"), ("constant", "constants")):
        group = [t for t in saved if t["origin"] == origin]
        if group:
            nbytes = sum(t["bytes"] for t in group)
            lines.append(f"[dim]+ {len(group)} {label}, {_bytes(nbytes)}[/]")
    return "\n".join(lines) or "nothing"


def summary_table(comparison: Comparison):
    """One row per port: accuracy, residual totals, times, versions (fits 80 columns)."""
    from rich import box
    from rich.table import Table

    table = Table(
        title=f"compare · seed {comparison.seed} · D={comparison.dim} F={comparison.features} "
        f"· against {comparison.canonical}",
        caption="output, gradients: largest |port - canonical| (fwd: shared params; ex: the "
        "exercise, own init; worst gradient), then the bound at that element (red: over it) · "
        "saved: residuals kept, count · KiB, parameters left out · warm: median per call, "
        "a new seed each call · "
        "first call: fresh process, no compilation cache",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,  # narrow gaps: the table fits 80 columns
    )
    # Every cell is a few short lines; only the port column may wrap (long versions).
    table.add_column("port", min_width=14)
    for column in ("output", "gradients", "saved", "warm", "first call"):
        table.add_column(column, no_wrap=True)
    for row in comparison.ports:
        versions = "\n".join(f"[dim]{k} {v}[/]" for k, v in row.versions.items())
        label = f"[bold]{row.name}[/]\n{versions}" if versions else row.name
        if row.state != "available" or row.error:
            colour = "yellow" if row.state == "unavailable" else "bold red"
            why = f"[{colour}]{row.state}[/]: {row.reason}" if not row.error else row.error
            table.add_row(label, why, "", "", "", "", end_section=True)
            continue
        if row.reference:
            accuracy = ["[dim]reference[/]", "[dim]reference[/]"]
        else:
            worst = row.worst_gradient
            accuracy = [
                _diff(row.output, "fwd") + "\n" + _diff(row.exercise, "ex"),
                _diff(worst[1], f"d{worst[0]}") if worst else "-",
            ]
        saved = "\n".join(
            f"{label} {r.count} · {r.bytes / 1024:.1f}" for label, r in row.residuals.items()
        )
        warm = f"fwd {_seconds(row.warm_forward_seconds)}\nvjp {_seconds(row.warm_vjp_seconds)}"
        first = row.first_call
        if "error" in first:
            first_cell = f"[red]{first['error']}[/]"
        elif first:
            first_cell = "\n".join(
                f"{label} {_seconds(first[key])}"
                for label, key in (("import", "import"), ("fwd", "forward"), ("vjp", "vjp"))
            )
        else:
            first_cell = "[dim]skipped[/]"
        table.add_row(label, *accuracy, saved, warm, first_cell, end_section=True)
    return table


def residual_table(comparison: Comparison):
    """One row per port and checkpoint setting: every residual, and what is recomputed."""
    from rich import box
    from rich.table import Table

    table = Table(
        title="residuals: what the backward pass keeps, from each framework's own instrument",
        caption="kept: count · bytes, parameters left out; checkpoint regions found · "
        "recomputed: forward ops the backward pass runs again",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,  # narrow gaps: the table fits 80 columns
    )
    table.add_column("port", min_width=14)
    table.add_column("ckpt")
    table.add_column("kept", no_wrap=True)
    table.add_column("saved: shape dtype origin", min_width=24)
    table.add_column("recomputed", no_wrap=True)
    for row in comparison.ports:
        for label, r in row.residuals.items():
            recomputed = "\n".join(f"{op} x{n}" for op, n in sorted(r.recomputed.items()))
            regions = "" if r.checkpoint_regions is None else f"\n{r.checkpoint_regions} regions"
            table.add_row(
                row.name if label == "off" else "",
                label,
                f"{r.count} · {_bytes(r.bytes)}{regions}",
                residual_list(r.saved),
                recomputed or "[dim]nothing[/]",
                end_section=label == "on",
            )
    return table


def print_comparison(comparison: Comparison, console) -> None:
    """Both tables, and the wall time."""
    console.print(summary_table(comparison))
    console.print(residual_table(comparison))
    console.print(f"compare: {comparison.seconds:.1f}s wall")


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--first-call":
    _first_call_child(*sys.argv[2:])
