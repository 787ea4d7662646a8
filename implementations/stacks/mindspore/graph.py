"""MindSpore's graph mode (`GRAPH_MODE`): the stack's `MLP` compiled whole, forward and VJP,
and the compiler's IR as the evidence. Imports mindspore and numpy.

`ms.set_context(mode=GRAPH_MODE)` is process-global (and importing the
stack sets PyNative), so `enter()` belongs in a process of its own: the
compare row and the bench stack start one.

- **Running:** `GraphMLP(params, checkpoint)`: one `MLP` cell whose
  parameters are loaded per call (`load`), its compiled forward (`forward`)
  and its compiled forward-and-VJP (`vjp`: `GradOperation` with a
  cotangent, x's gradient and every parameter's).
- **Evidence:** `ir_evidence(...)` compiles a fresh `GraphMLP`'s VJP with
  the IR saved into a scratch directory, and reads the graph MindSpore
  writes after its `add_recomputation` pass (`*_add_recomputation_*.ir`)
  with `graph_ir.parse_ir`: ops per kind forward and backward, the
  recomputed copies (`duplicated: Bool(1)`, each with the `recompute_id` of
  the forward node it copies), and what backward nodes read from the
  forward (the "saved" values of a whole-graph compile).

Pitfalls (MindSpore 2.10.0): `construct`'s first argument must be named
`self` in graph mode; `MS_DEV_SAVE_GRAPHS` is read once, when mindspore
is imported, so the IR is switched on per compile with
`set_context(save_graphs=...)` (deprecated, still honoured); without
a forward output in the compiled graph the compiler drops the forward and
nothing is "duplicated", so `VJPCell` returns the output too.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ...contract import Params, check_x
from ..numpy import canonical_params
from .graph_ir import GraphEvidence, IRMissing, parse_ir
from .loaded import ms
from .mlp import MLP, parameters

# Through `loaded`: MindSpore is imported only where it can load (never after Paddle).
nn, ops = ms.nn, ms.ops


__all__ = [
    "GraphEvidence",
    "GraphMLP",
    "IRMissing",
    "canonical_params",
    "enter",
    "ir_evidence",
    "parse_ir",
]

#: The graph MindSpore writes after its recompute pass (one per compile, numbered).
IR_PATTERN = "*add_recomputation*.ir"


def enter() -> None:
    """Switch this process to graph mode (process-global: call it in a process of its own)."""
    ms.set_context(mode=ms.GRAPH_MODE)


def in_graph_mode() -> bool:
    return ms.get_context("mode") == ms.GRAPH_MODE


_GRAD = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)


class VJPCell(nn.Cell):
    """`(output, ((dx,), (dw1, db1, dw2, db2)))` of an `MLP` for x and a cotangent, one graph."""

    def __init__(self, model: MLP):
        super().__init__()
        self.model = model
        self.weights = ms.ParameterTuple(parameters(model))

    def construct(self, x, cotangent):  # graph mode wants the first argument named self
        # The output too: a graph that returns gradients alone loses its forward, and
        # the recompute pass then has no forward node to copy.
        return self.model(x), _GRAD(self.model, self.weights)(x, cotangent)


class GraphMLP:
    """An `MLP` (checkpoint on: `Cell.recompute()`) run in graph mode, parameters loaded per
    call; its first `forward` and `vjp` compile. `mlp`: the model class (a mutant's)."""

    def __init__(self, params: Params, *, checkpoint: bool, mlp: type[MLP] = MLP):
        if not in_graph_mode():
            raise RuntimeError("GraphMLP needs graph mode: call graph.enter() first")
        self.features = params.features
        self.model = mlp(params, checkpoint=checkpoint)
        self.vjp_cell = VJPCell(self.model)

    def load(self, params: Params) -> None:
        """Copy `params` into the cell (same shapes: a new shape would recompile)."""
        for parameter, array in zip(parameters(self.model), params.as_dict().values(), strict=True):
            if tuple(parameter.shape) != array.shape:
                raise ValueError(
                    f"params: shape {array.shape} for {parameter.name}, compiled for "
                    f"{tuple(parameter.shape)}"
                )
            parameter.set_data(ms.Tensor(np.array(array, np.float32, copy=True)))

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.model(ms.Tensor(check_x(x))).asnumpy().copy()

    def vjp(self, x: np.ndarray, cotangent: np.ndarray) -> tuple[np.ndarray, dict]:
        """The output and the gradients by name (w1, b1, w2, b2, x), as numpy copies."""
        x = check_x(x)
        cotangent = np.array(cotangent, np.float32, copy=True)
        if cotangent.shape != (self.features,):
            raise ValueError(f"cotangent must have shape ({self.features},), got {cotangent.shape}")
        out, ((dx,), weight_grads) = self.vjp_cell(ms.Tensor(x), ms.Tensor(cotangent))
        names = ("w1", "b1", "w2", "b2")
        grads = {n: g.asnumpy().copy() for n, g in zip(names, weight_grads, strict=True)}
        grads["x"] = dx.asnumpy().copy()
        return out.asnumpy().copy(), grads


# ---------------------------------------------------------------------------
# The IR
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def saving_graphs(directory: Path) -> Iterator[None]:
    """Save the IR of what compiles inside into `directory`, and stop after.

    Level 1, the least that still writes the `add_recomputation` graph (about a hundred
    files, 6 MB for the MLP; 2, which `True` means, writes 8 MB).
    """
    try:
        ms.set_context(save_graphs=1, save_graphs_path=str(directory))
    except (ValueError, TypeError, AttributeError) as error:
        raise IRMissing(
            f"MindSpore {ms.__version__} refuses set_context(save_graphs=...): {error}"
        ) from None
    try:
        yield
    finally:
        ms.set_context(save_graphs=False)


def ir_evidence(
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    *,
    checkpoint: bool,
    mlp: type[MLP] = MLP,
) -> GraphEvidence:
    """Compile a fresh `GraphMLP`'s VJP with the IR saved, and read it (`parse_ir`).

    Raises `IRMissing`, saying what MindSpore wrote instead, when no
    `*_add_recomputation_*.ir` appears.
    """
    with tempfile.TemporaryDirectory(prefix="remat-ms-ir-") as scratch:
        graph = GraphMLP(params, checkpoint=checkpoint, mlp=mlp)
        with saving_graphs(Path(scratch)):
            graph.vjp(x, cotangent)
        found = sorted(Path(scratch).rglob(IR_PATTERN))
        if not found:
            written = len(list(Path(scratch).rglob("*.ir")))
            raise IRMissing(
                f"MindSpore {ms.__version__} wrote no {IR_PATTERN} in graph mode "
                f"({written} other .ir files): its recompute pass is named differently or gone"
            )
        return parse_ir(found[-1].read_text(errors="replace"), found[-1].name)
