"""The MindSpore graph-mode bench stack: L blocks `x @ W1 + b1 -> relu -> @ W2 + b2`, (B, F) ->
(B, F), compiled whole (`GRAPH_MODE`). Imports mindspore and numpy, and enters graph mode.

Graph mode is process-global, so the bench runs this module in a process of its own (its
manifest entry is `isolated`; the PyNative `mindspore` stack runs in the bench's own). A block
is written with primitives so that a primitive can be marked for recompute:

- `none`: the blocks as they are;
- `full`: `Cell.recompute()` on every block;
- `save-mm`: `Primitive.recompute()` on each block's adds and relu and not on its matmuls:
  their outputs are kept and the rest is recomputed (MindSpore's per-primitive policy).

The step is one compiled graph returning the stack's output and the gradient of every
parameter for a cotangent (returning the output keeps the forward in the graph: without it
the compiler folds the last block's forward into its backward, and recomputes nothing there).

**Instruments.**

- *saved*: the forward values that backward nodes read, in the IR MindSpore saves after its
  `add_recomputation` pass (`implementations.stacks.mindspore.graph.parse_ir`), from a
  compile of its own with the IR switched on; x counts, parameters do not.
- *matmuls*: the MatMul nodes of that IR, forward and backward (recomputed copies included).
- *peak*: not measurable: on the CPU, `mindspore.runtime.max_memory_allocated()` and
  `memory_stats()` read 0 in graph mode (MindSpore 2.10.0), so it is None, never 0.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from implementations.bench_case import MODES, Data, Static

from . import graph
from .loaded import ms

# Through `loaded`: MindSpore is imported only where it can load (never after Paddle).
nn, ops = ms.nn, ms.ops

graph.enter()

FRAMEWORK = "mindspore_graph"
VARIANTS = ("",)  # graph mode on the CPU: one way to run the stack
#: `bench --policies`: save_dots is the stack's save-mm (the adds and relu recomputed).
POLICIES = ("none", "full", "save_dots")
NOT_EXPRESSIBLE = {
    "save_named": "no names: Primitive.recompute marks ops, not tensors",
    "offload_dots": "graph-mode recompute has no offload option",
    "budget": "graph-mode recompute has no memory budget",
}


def versions() -> dict[str, str]:
    """MindSpore's version and the mode."""
    return {"mindspore": ms.__version__, "mode": "GRAPH_MODE"}


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


class GraphCase:
    """One mode at one depth: the stack's step cell, compiled on its first call.

    **Arguments:**

    - `variant`: `""` (graph mode on the CPU is the only way here).
    - `mode`: see the module docstring.
    - `data`: the depth's `Data` (kernels `(in, out)`, as the blocks take them).
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; mindspore_graph has one way")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        self.variant, self.mode = variant, mode
        self.blocks = [tuple(arrays) for arrays in data.blocks]
        self.x, self.cotangent = ms.Tensor(data.x), ms.Tensor(data.cotangent)
        self.cell = _step_cell(mode, self.blocks)

    def measure(self) -> Static:
        """What a fresh compile's IR shows (a compile of its own, with the IR saved)."""
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
        return Static(tuple(evidence.saved), peak_bytes=None, matmuls=matmuls)

    def gradients(self) -> list:
        """The parameters' gradients of one step (w1, b1, w2, b2 per block), numpy copies."""
        _, grads = self.cell(self.x, self.cotangent)
        return [g.asnumpy().copy() for g in grads]

    def step(self) -> None:
        self.cell(self.x, self.cotangent)
        ms.runtime.synchronize()


def build(variant: str, mode: str, data: Data) -> GraphCase:
    """The case for one configuration."""
    return GraphCase(variant, mode, data)


def policy_case(policy: str, data: Data) -> GraphCase:
    """`bench --policies`: save_dots is the stack's save-mm."""
    return GraphCase("", "save-mm" if policy == "save_dots" else policy, data)


def _step_cell(mode: str, blocks):
    """`(x, c) -> (y, grads)` for the blocks, as the mode runs them (built on first use)."""

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
