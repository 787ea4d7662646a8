"""MindSpore in graph mode as a row of `compare` (`mindspore_graph`), measured in a process of
its own.

The `mindspore` port runs PyNative; graph mode (`GRAPH_MODE`) is
process-global, so this row is measured in a fresh process
(`running.isolation`): the stack's `MLP`
compiled whole (`implementations.stacks.mindspore.graph`), on the
comparison's parameters, against the canonical results the parent made:

- accuracy and precision bits as every row (`measure.diff`,
  `measure.precision_bits`); the exercise uses the numpy init, as the
  PyNative port does;
- residuals from the IR after MindSpore's `add_recomputation` pass,
  checkpoint off and on (`graph.ir_evidence`): the recomputed copies by
  kind, the forward values read by backward nodes (saved), the backward
  ops per kind in the instrument's text; where the IR is missing the row
  says so in its error, never zeros;
- warm forward and VJP times (interleaved with each other), and with
  `first_calls` the import and the first forward and VJP (each compiles).

`compare` runs it as one of its lanes (`serve_lane`: measured beside the
others, timed when its turn comes), and its first call in a fresh process
of its own afterwards. Alone: `start(...)` then `collect(child)`, or
`compare(...)` for both. Where mindspore is not installed the row reads
"unavailable" with the reason.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import tempfile
import time
from multiprocessing import connection as connections
from pathlib import Path

import numpy as np

import implementations
from implementations.contract import Params

from ..checking import precision
from ..checking.tolerance import INIT_ULPS, forward_bound, vjp_comparison
from ..running import environment, isolation
from ..running.timing import time_interleaved
from . import lanes, measure
from .measure import Expected, PortComparison, Timing

NAME = "mindspore_graph"
FRAMEWORK = "mindspore"
TIMEOUT_SECONDS = 600.0
# The port's install hint, where the registry keeps it.
UNINSTALLED = "mindspore is not installed" + implementations.install_hint(FRAMEWORK)


def wanted(names) -> bool:
    """Whether a comparison of `names` (None: the default set) includes this row."""
    return not names or FRAMEWORK in names or NAME in names


def unavailable(reason: str) -> PortComparison:
    return PortComparison(NAME, "unavailable", reason=reason, framework=FRAMEWORK)


def start(
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    repeats: int,
    exact: precision.Reference,
    expected: Expected,
    first_calls: bool,
    output: Path,
) -> isolation.Child | PortComparison:
    """Start the measuring process (its output goes to `output`); a row at once where
    mindspore is not installed."""
    if importlib.util.find_spec(FRAMEWORK) is None:
        return unavailable(UNINSTALLED)
    env = dict(os.environ)
    env.pop("MS_COMPILER_CACHE_ENABLE", None)  # a first call must compile
    args = (params, x, cotangent, seed, repeats, exact, expected, first_calls)
    return isolation.Child(f"{__name__}:measure_here", args, output=output, env=env)


def collect(
    child: isolation.Child | PortComparison, timeout: float = TIMEOUT_SECONDS
) -> PortComparison:
    """The row `start` began: the child's answer, or an error row saying how it ended."""
    if isinstance(child, PortComparison):
        return child
    try:
        if not connections.wait([child.connection], timeout=timeout):
            child.kill()
            return _failed(f"no answer within {timeout:.0f} s")
        try:
            status, value = child.connection.recv()
        except (EOFError, OSError):  # it died before answering
            child.end(grace=10)
            last = isolation.tail(child.output, 1) or "no output"
            return _failed(f"{child.death()}: {last}")
        child.end(grace=10)
    except BaseException:  # interrupted: leave nothing running
        child.kill()
        raise
    return value if status == "returned" else _failed(value)


def _failed(error: str) -> PortComparison:
    row = PortComparison(NAME, "available", framework=FRAMEWORK, lane=NAME)
    row.error = f"in a process of its own: {error}"
    return row


def compare(
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    repeats: int,
    exact: precision.Reference,
    expected: Expected,
    first_calls: bool = False,
) -> PortComparison:
    """`start`, then `collect`: the row, measured in a process of its own."""
    with tempfile.TemporaryDirectory(prefix="remat-ms-graph-") as scratch:
        args = (params, x, cotangent, seed, repeats, exact, expected, first_calls)
        return collect(start(*args, output=Path(scratch) / "output"))


# ---------------------------------------------------------------------------
# In the child
# ---------------------------------------------------------------------------


def measure_here(
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    repeats: int,
    exact: precision.Reference,
    expected: Expected,
    first_calls: bool,
) -> PortComparison:
    """In this fresh process: load the stack, enter graph mode, measure the row and time it."""
    row, calls = _measure(params, x, cotangent, seed, exact, expected, first_calls)
    if calls is not None:
        _time(row, calls, repeats)
    return row


def serve_lane(names, params, x, cotangent, seed, repeats, exact, expected):
    """The row as a lane of `compare` (`lanes.serve`'s protocol): measure and report it, then
    time it when asked, while the other lanes wait."""
    to_parent = isolation.connection()
    row, calls = _measure(params, x, cotangent, seed, exact, expected, first_calls=False)
    to_parent.send(("row", row))
    to_parent.send(("measured",))
    timings = {}
    if to_parent.recv() == "time" and calls is not None:
        samples = time_interleaved(list(calls), repeats)
        timings = {NAME: tuple(Timing.of(s) for s in samples)}
    lanes.finish(to_parent, timings)


def _time(row: PortComparison, calls, repeats: int) -> None:
    forward_samples, vjp_samples = time_interleaved(list(calls), repeats)
    measure.set_warm(row, Timing.of(forward_samples), Timing.of(vjp_samples), lane=NAME)


def _measure(params, x, cotangent, seed, exact, expected, first_calls):
    """The row without its times, and its two timed calls (None if it could not run)."""
    environment.prepare()
    started = time.perf_counter()
    try:
        import mindspore

        from implementations.stacks.mindspore import arrays, graph
    except ImportError as error:  # not installed, blocked, or StackUnavailable
        return unavailable(f"mindspore does not load: {error}"), None
    imported = time.perf_counter()
    graph.enter()
    row = PortComparison(
        NAME,
        "available",
        framework=FRAMEWORK,
        versions={"mindspore": mindspore.__version__},
        matmul_precision={**arrays.matmul_precision(), "mode": "GRAPH_MODE"},
        lane=NAME,
    )
    try:
        model = graph.GraphMLP(params, checkpoint=True)
        seeds = itertools.count(seed)

        def exercise() -> np.ndarray:  # nn_checkpoint_forward: the numpy init for a seed
            model.load(graph.canonical_params(next(seeds), params.dim, params.features))
            return model.forward(x)

        def vjp() -> tuple[np.ndarray, dict[str, np.ndarray]]:
            model.load(params)
            return model.vjp(x, cotangent)

        own = exercise()  # the first call of each compiles
        first_forward = time.perf_counter()
        _, grads = vjp()
        first_vjp = time.perf_counter()
        if first_calls:
            row.first_call = {
                "import": imported - started,
                "forward": first_forward - imported,
                "vjp": first_vjp - first_forward,
            }
        model.load(params)
        out = model.forward(x)
        _accuracy(row, params, x, cotangent, out, own, grads, expected)
        row.precision = measure.precision_bits(exact, params, x, cotangent, out, own, grads)
        for label, on in (("off", False), ("on", True)):
            evidence = graph.ir_evidence(params, x, cotangent, checkpoint=on)
            row.residuals[label] = _residuals(evidence)
    except graph.IRMissing as error:
        row.error = f"no IR evidence: {error}"
        return row, None
    except Exception as error:  # a broken row says so, and the others still run
        row.error = f"{type(error).__name__}: {error}"
        return row, None
    return row, (exercise, vjp)


def _accuracy(row, params, x, cotangent, out, own, grads, expected: Expected) -> None:
    row.output = measure.diff(out, expected.forward, forward_bound(params, x))
    bound = forward_bound(params, x, param_ulps=INIT_ULPS)
    row.exercise = measure.diff(own, expected.exercise, bound)
    reference = expected.grads
    for name, (shift, bound) in vjp_comparison(params, x, cotangent, grads, reference).items():
        row.gradients[name] = measure.diff(grads[name], reference[name], bound, shift)


def _residuals(evidence) -> measure.Residuals:
    """The IR's evidence as a row's residuals; the op counts go into the instrument's text."""
    found = measure.residuals(evidence.record())

    def ops(counts: dict[str, int]) -> str:
        return ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items())) or "none"

    found.instrument += (
        f"; forward ops: {ops(evidence.forward)}; backward ops: {ops(evidence.backward)}"
    )
    return found
