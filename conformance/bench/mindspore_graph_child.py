"""The child process of the MindSpore graph-mode bench stack (`mindspore_graph_stack`):
it enters graph mode, builds and runs the cases the parent asks for. Imports mindspore and
numpy; run only by `running.isolation` (graph mode is process-global).

Requests `(op, arguments)` on the isolation connection, answered `("ok", value)` or
`("error", "Type: message")`: `build` (mode, blocks, x, cotangent) -> a case number;
`measure` (case) -> `{"saved", "matmuls", "recomputed"}`; `step` (case); `gradients`
(case) -> the parameters' gradients; `drop` (case); `stop`. The first message says
`("hello", versions)`, or `("unavailable", reason)` where mindspore does not load.

A block is `x @ W1 + b1 -> relu -> @ W2 + b2` on `(B, F)`, written with primitives so that a
primitive can be marked for recompute:

- `none`: the blocks as they are;
- `full`: `Cell.recompute()` on every block;
- `save-mm`: `Primitive.recompute()` on each block's adds and relu and not on its matmuls:
  their outputs are kept and the rest is recomputed (MindSpore's per-primitive policy).

The step is one compiled graph returning the stack's output and the gradient of every
parameter for a cotangent (returning the output keeps the forward in the graph: without it
the compiler folds the last block's forward into its backward, and recomputes nothing there).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ..running import isolation


def serve() -> None:
    """The child's loop: hello, then one answer per request until `stop` or the pipe closes."""
    to_parent = isolation.connection()
    try:
        import mindspore as ms

        from implementations.stacks.mindspore import graph
    except ImportError as error:  # not installed, blocked, or StackUnavailable
        to_parent.send(("unavailable", f"mindspore does not load: {error}"))
        return
    graph.enter()
    to_parent.send(("hello", {"mindspore": ms.__version__, "mode": "GRAPH_MODE"}))
    cases: dict[int, Any] = {}
    while True:
        try:
            op, arguments = to_parent.recv()
        except EOFError:  # the parent went away
            return
        if op == "stop":
            return
        try:
            to_parent.send(("ok", _handle(op, arguments, cases)))
        except Exception as error:  # the parent raises it, naming the request
            to_parent.send(("error", f"{type(error).__name__}: {error}"))


def _handle(op: str, arguments: dict[str, Any], cases: dict[int, Any]) -> Any:
    if op == "build":
        number = max(cases, default=-1) + 1
        cases[number] = GraphCase(**arguments)
        return number
    if op == "measure":
        return cases[arguments["case"]].measure()
    if op == "step":
        return cases[arguments["case"]].step()
    if op == "gradients":
        return cases[arguments["case"]].gradients()
    if op == "drop":
        cases.pop(arguments["case"], None)
        return None
    raise ValueError(f"unknown request {op!r}")


class GraphCase:
    """One mode at one depth: the stack's step cell, compiled on its first call."""

    def __init__(self, mode: str, blocks, x, cotangent):
        import mindspore as ms

        self.mode = mode
        self.blocks, self.x_array, self.c_array = blocks, x, cotangent
        self.x, self.cotangent = ms.Tensor(x), ms.Tensor(cotangent)
        self.cell = _step_cell(mode, blocks)

    def measure(self) -> dict[str, Any]:
        """What a fresh compile's IR shows (a compile of its own, with the IR saved)."""
        from implementations.stacks.mindspore import graph

        with tempfile.TemporaryDirectory(prefix="remat-ms-bench-ir-") as scratch:
            with graph.saving_graphs(Path(scratch)):
                _step_cell(self.mode, self.blocks)(self.x, self.cotangent)
            found = sorted(Path(scratch).rglob(graph.IR_PATTERN))
            if not found:
                raise graph.IRMissing(f"no {graph.IR_PATTERN} among the IR MindSpore saved")
            evidence = graph.parse_ir(found[-1].read_text(errors="replace"), found[-1].name)
        matmuls = sum(
            n
            for counts in (evidence.forward, evidence.backward)
            for kind, n in counts.items()
            if "matmul" in kind.lower()
        )
        return {"saved": evidence.saved, "matmuls": matmuls, "recomputed": evidence.recomputed}

    def gradients(self) -> list:
        """The parameters' gradients of one step, as numpy copies (for tests)."""
        _, grads = self.cell(self.x, self.cotangent)
        return [g.asnumpy().copy() for g in grads]

    def step(self) -> None:
        import mindspore as ms

        self.cell(self.x, self.cotangent)
        ms.runtime.synchronize()


def _step_cell(mode: str, blocks):
    """`(x, c) -> (y, grads)` for the blocks, as the mode runs them (built on first use)."""
    import mindspore as ms
    from mindspore import nn, ops

    class Block(nn.Cell):
        def __init__(self, arrays):
            super().__init__()
            names = ("w1", "b1", "w2", "b2")
            for name, array in zip(names, arrays, strict=True):
                setattr(self, name, ms.Parameter(ms.Tensor(array), name=name))
            self.mm1, self.mm2 = ops.MatMul(), ops.MatMul()
            self.add1, self.add2, self.relu = ops.Add(), ops.Add(), ops.ReLU()
            if mode == "full":
                self.recompute()
            elif mode == "save-mm":
                for primitive in (self.add1, self.add2, self.relu):
                    primitive.recompute()

        def construct(self, x):  # (B, F) -> (B, F); graph mode wants `self` first
            h = self.add1(self.mm1(x, self.w1), self.b1)
            return self.add2(self.mm2(self.relu(h), self.w2), self.b2)

    class Stack(nn.Cell):
        def __init__(self):
            super().__init__()
            self.blocks = nn.CellList([Block(arrays) for arrays in blocks])

        def construct(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    grad = ops.GradOperation(get_by_list=True, sens_param=True)

    class Step(nn.Cell):
        def __init__(self, stack):
            super().__init__()
            self.stack = stack
            self.weights = ms.ParameterTuple(stack.trainable_params())

        def construct(self, x, cotangent):
            return self.stack(x), grad(self.stack, self.weights)(x, cotangent)

    if mode not in ("none", "full", "save-mm"):
        raise ValueError(f"unknown mode {mode!r}")
    return Step(Stack())
