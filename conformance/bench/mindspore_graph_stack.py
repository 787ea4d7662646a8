"""The MindSpore graph-mode stack: L blocks `x @ W1 + b1 -> relu -> @ W2 + b2`, (B, F) ->
(B, F), compiled whole (`GRAPH_MODE`) in a child process of its own. Imports no ML framework
here: numpy, the standard library and `running.isolation`.

Graph mode is process-global and the bench runs the other stacks in its own process (the
PyNative `mindspore` stack too), so the cases live in a child
(`mindspore_graph_child.serve`), started when this module is imported; the sweep's calls
are requests to it. Modes (the child's docstring): `none`; `full`, `Cell.recompute()` per
block; `save-mm`, `Primitive.recompute()` on each block's adds and relu, not its matmuls.

**Instruments.**

- *saved*: the forward values that backward nodes read, in the IR MindSpore saves after its
  `add_recomputation` pass (`implementations.stacks.mindspore.graph.parse_ir`), from a
  compile of its own with the IR switched on; x counts, parameters do not.
- *matmuls*: the MatMul nodes of that IR, forward and backward (recomputed copies included).
- *peak*: not measurable: on the CPU, `mindspore.runtime.max_memory_allocated()` and
  `memory_stats()` read 0 in graph mode (MindSpore 2.10.0), so it is None, never 0.
- *step*: the Python call, a round trip to the child included (well under a millisecond).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import tempfile
import weakref
from pathlib import Path
from typing import Any

from ..running import isolation
from .measure import MODES, Data, Static

FRAMEWORK = "mindspore_graph"
VARIANTS = ("",)  # graph mode on the CPU: one way to run the stack
CHILD = "conformance.bench.mindspore_graph_child:serve"
#: Seconds to wait for an answer: a deep stack compiles for a while on a shared machine.
TIMEOUT_SECONDS = 1800.0


class _Child:
    """The running child: one request at a time, answered or raised as an error naming it."""

    def __init__(self):
        handle, name = tempfile.mkstemp(prefix="remat-ms-graph-bench-", suffix=".out")
        os.close(handle)
        self.output = Path(name)
        env = dict(os.environ)
        env.pop("MS_COMPILER_CACHE_ENABLE", None)
        self.child = isolation.Child(CHILD, (), output=self.output, env=env)
        kind, value = self._receive("hello")
        if kind == "unavailable":
            self.close()
            raise ImportError(value)
        self.versions: dict[str, str] = value

    def _receive(self, what: str) -> tuple[str, Any]:
        if not self.child.connection.poll(TIMEOUT_SECONDS):
            self.close()
            raise RuntimeError(f"mindspore_graph bench: no answer to {what!r} in time")
        try:
            return self.child.connection.recv()
        except (EOFError, OSError):
            last = isolation.tail(self.output, 3) or "no output"
            death = self.child.death()
            self.close()
            raise RuntimeError(
                f"mindspore_graph bench: the child ended ({death}) during {what!r}: {last}"
            ) from None

    def call(self, op: str, **arguments: Any) -> Any:
        if self.child.process.returncode is not None or not self.child.alive:
            raise RuntimeError(f"mindspore_graph bench: the child is gone before {op!r}")
        self.child.send((op, arguments))
        kind, value = self._receive(op)
        if kind == "error":
            raise RuntimeError(f"mindspore_graph bench: {op!r} failed in the child: {value}")
        return value

    def close(self) -> None:
        if self.child.alive:
            self.child.send(("stop", {}))
        self.child.end(grace=5)
        self.output.unlink(missing_ok=True)


def _start() -> _Child:
    """The child, greeted; `ImportError` with the reason where mindspore cannot run, so that
    `load_frameworks` skips this stack as it skips a framework that is not installed."""
    if importlib.util.find_spec("mindspore") is None:
        raise ImportError("mindspore is not installed (pip install 'remat-conformance[mindspore]')")
    child = _Child()
    atexit.register(child.close)
    return child


_child = _start()


def versions() -> dict[str, str]:
    """MindSpore's version and the mode, as the child reports them."""
    return dict(_child.versions)


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


def _drop(child: _Child, case: int) -> None:
    # A finalizer: the child may be gone already (the sweep ended, or it crashed).
    with contextlib.suppress(Exception):  # freeing is best effort, never an error of its own
        child.call("drop", case=case)


class GraphCase:
    """One configuration at one depth, built and held by the child.

    **Arguments:**

    - `variant`: `""` (graph mode on the CPU is the only way here).
    - `mode`: see the module docstring.
    - `data`: the depth's `measure.Data` (kernels `(in, out)`, as the blocks take them).
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; mindspore_graph has one way")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        self.variant, self.mode = variant, mode
        self.case = int(
            _child.call(
                "build",
                mode=mode,
                blocks=[tuple(arrays) for arrays in data.blocks],
                x=data.x,
                cotangent=data.cotangent,
            )
        )
        weakref.finalize(self, _drop, _child, self.case).atexit = False

    def measure(self) -> Static:
        found = _child.call("measure", case=self.case)
        return Static(tuple(found["saved"]), peak_bytes=None, matmuls=int(found["matmuls"]))

    def step(self) -> None:
        _child.call("step", case=self.case)  # answers once the step has run

    def gradients(self) -> list:
        """The parameters' gradients of one step (w1, b1, w2, b2 per block), numpy."""
        return _child.call("gradients", case=self.case)


def build(variant: str, mode: str, data: Data) -> GraphCase:
    """The case for one configuration (built in the child)."""
    return GraphCase(variant, mode, data)
