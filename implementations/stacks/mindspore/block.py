"""The exercise's block in MindSpore (PyNative, CPU), and the one builder that places it over L
blocks. Imports mindspore (through the stack, which sets PyNative mode, warms the first-call
glitch away and refuses to load after Paddle) and numpy.

- The block is the port's own cell, `mlp.MLP` (`Affine -> ReLU -> Affine`, `x @ W + b`, W
  `(in, out)`), unrecomputed; `Items` groups a placement's items as cells, a region calling
  `Cell.recompute()` on its group (reentrant: `_RecomputeCell` reruns the whole group in its
  bprop), nested as the placement nests.
- `place(placement)`: `run(x, *params)`; its cells are built once, on the first parameters
  it meets. `vjp(run, params, x, cotangent, wrt)`: `mindspore.vjp` of the cells and its
  pullback: the call every measurement watches, and the bench times.

Declarations (`implementations.measuring.driver` reads them): `Cell.recompute` takes no policy
(`POLICIES` is empty), what it cannot express and why (`NOT_EXPRESSIBLE`); no departure:
MindSpore's counts are the model's (`DEPARTURES` is empty; its peak is not observable).

Graph mode is another program, the compiled one: `graph_bench` (its own bench entry, in a
process of its own) measures it from its IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from implementations.contract import Params, installed_versions
from implementations.measuring.placement import Placement
from implementations.schedules import Region

from .loaded import ms
from .mlp import MLP
from .stack import STACK  # PyNative mode, warmed

FRAMEWORK = "mindspore"
POLICIES: dict[str, str] = {}
#: The plan's code (`python -m conformance plan`): a placement's regions with MindSpore's own
#: API, `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """from mindspore import nn

def placed(items):  # blocks: your L cells
    cells = []
    for item in items:
        if isinstance(item, list):
            region = placed(item)
            region.recompute()
            cells.append(region)
        else:
            cells.append(blocks[item])
    return nn.SequentialCell(cells)

model = placed($placement)"""
REGION = "Cell.recompute() on a cell grouping its items (reentrant: its bprop reruns them all)"
_NO_POLICY = "Cell.recompute takes no policy"
NOT_EXPRESSIBLE = {
    "save-mm": _NO_POLICY,
    **dict.fromkeys(("save_dots", "save_named", "offload_dots"), _NO_POLICY),
    "budget": "MindSpore has no memory-budget solver in PyNative: Cell.recompute takes none",
}
DEPARTURES: dict[str, Any] = {}


class Items(ms.nn.Cell):
    """A placement's items in order as cells: a block cell (`MLP`, its `block_index` set) or
    an `Items` of a region, `recompute()` called on it."""

    def __init__(self, items: tuple, params: Sequence[ms.Tensor], *, region: bool):
        super().__init__()
        parts = []
        for item in items:
            if isinstance(item, Region):
                parts.append(Items(item.items, params, region=True))
            else:
                arrays = Params(*(_host(p) for p in params[4 * item : 4 * item + 4]))
                block = MLP(arrays, checkpoint=False)
                block.block_index = item
                parts.append(block)
        self.parts = ms.nn.CellList(parts)
        if region:
            self.recompute()

    def construct(self, x):
        for part in self.parts:
            x = part(x)
        return x


class Placed:
    """`run(x, *params)`: a placement's cells, built on the first parameters they meet."""

    def __init__(self, items: tuple):
        self.items, self.built = items, None

    def cells(self, params: Sequence[ms.Tensor]) -> Items:
        if self.built is None:
            self.built = Items(self.items, params, region=False)
        return self.built

    def __call__(self, x: ms.Tensor, *params: ms.Tensor) -> ms.Tensor:
        return self.cells(params)(x)


def place(placement: Placement) -> Placed:
    """`run(x, *params)`: the placement's blocks and regions (4 parameters a block, in order)."""
    wanted = sorted(placement.used_policies() - {""})
    if wanted:
        raise ValueError(
            f"placement: policy {wanted[0]!r} is not expressible in MindSpore: "
            f"{NOT_EXPRESSIBLE.get(wanted[0], _NO_POLICY)}"
        )
    return Placed(placement.items)


def vjp(
    run: Placed, params: Sequence[ms.Tensor], x: ms.Tensor, cotangent: ms.Tensor, wrt: str
) -> tuple[ms.Tensor, tuple[ms.Tensor, ...]]:
    """`(y, gradients)`: `mindspore.vjp` of the cells with respect to their parameters
    (`wrt="params"`, x held fixed) or to x (`wrt="x"`), and its pullback of `cotangent`."""
    cells = run.cells(params)
    if wrt == "params":
        y, pullback = ms.vjp(cells, x, weights=cells.trainable_params())
        grads = pullback(cotangent)[1]
    elif wrt == "x":
        y, pullback = ms.vjp(cells, x)
        grads = (pullback(cotangent),)
    else:
        raise ValueError(f"wrt must be 'params' or 'x', got {wrt!r}")
    return y, tuple(grads)


def from_numpy(array: np.ndarray) -> ms.Tensor:
    """MindSpore's tensor for the bench's data: a float32 copy."""
    return ms.Tensor(np.array(array, np.float32, order="C"))


def _host(tensor: ms.Tensor) -> np.ndarray:
    return STACK.to_numpy(tensor)


def versions() -> dict[str, str]:
    """The installed MindSpore, its execution mode and device."""
    found = installed_versions(("mindspore",))
    found["mode"] = "PyNative" if ms.get_context("mode") == ms.PYNATIVE_MODE else "graph"
    found["device"] = str(ms.get_context("device_target"))
    return found
