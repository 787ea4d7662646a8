"""MindSpore's instrument (PyNative mode): a context around the very call that is checked, giving
a `Record`. Imports mindspore and numpy; builds no cell of its own.

`watch(x, parameters)` hooks the call (the bench's `block.vjp`, or a port's own `vjp` or
`nn_checkpoint_forward` and a backward pass of its output, `observe`); `peak()` says why the
peak is not observable.

- **Phases.** The call is in its backward pass while PyNative's executor computes a gradient
  (`_pynative_executor.grad`, behind `mindspore.vjp`'s pullback, `mindspore.grad` and
  `mindspore.value_and_grad`), in its forward pass otherwise.
- **Saved:** `mindspore.saved_tensors_hooks(pack, unpack)` around the whole call: every tensor
  autograd keeps in the forward pass, once per storage (`hooks_evidence.ObservedCall`). Origins
  by values (`hooks_evidence.classify_by_values`): a tensor no leaf cell made whose values
  are x's is the input, one whose values are a parameter's a parameter, anything else an
  activation. Roles: each leaf cell's output by its place in the block (`Affine`, `ReLU`,
  `Affine`: h, a, y). Memory space: `device`, the CPU's memory, MindSpore's device here.
- **Recomputed:** every leaf cell (`Cell.__call__` watched; MindSpore's own `_`-named
  wrappers left out) run in the backward pass, by class.
- **Matmuls:** every call of `mindspore.ops.matmul` (the functional the block's `Affine`
  calls, looked up at each call), per phase: the backward pass's are a rerun's.
  `backward_matmuls` is not observable: the gradient's MatMul kernels run in PyNative's C++
  backward, which no hook reaches.
- **Evaluations:** each run of the block cell's `construct` (`mlp.MLP`, seen by
  `sys.setprofile`, which also sees a rerun that `_RecomputeCell` calls without
  `Cell.__call__`), its index its `block_index` (-1 on a port's own cell), with the
  `ops.matmul` calls on its own kernels.
- **Regions:** cells with `recompute()` entered in the forward pass. **Reruns:** not
  observable (see `RERUNS`); the backward pass's block evaluations show them.
- **Peak:** not observable (`PEAK`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ...contract import BackwardRecord
from ...measuring.record import MATMULS, NotObservable, Record
from .. import hooks_evidence
from ..block_runs import BlockRuns
from .arrays import to_host_array
from .loaded import ms
from .mlp import MLP

INSTRUMENT = (
    "the call under mindspore.saved_tensors_hooks (storages packed before its backward pass, "
    "deduplicated; x and parameters told by values); leaf cells run during "
    "_pynative_executor.grad, by class; mindspore.ops.matmul calls before and during the "
    "gradient (a rerun's; the gradient's own kernels are C++)"
)
METHODS = {
    "saved": "storages packed by mindspore.saved_tensors_hooks before the backward pass",
    "evaluations": "runs of the block cell's construct (sys.setprofile), with the "
    "mindspore.ops.matmul calls on its kernels",
    "forward_matmuls": "mindspore.ops.matmul calls before _pynative_executor.grad",
    "recomputed": "leaf cells called during _pynative_executor.grad, by class",
    "regions": "cells with recompute() called in the forward pass",
}
BACKWARD_MATMULS = NotObservable(
    "the gradient's MatMul kernels run in PyNative's C++ backward, which no Python hook reaches"
)
RERUNS = NotObservable(
    "a region reruns inside _RecomputeCell.bprop, called by PyNative's C++ backward: no hook "
    "tells one rerun from the next (the backward pass's block evaluations are counted)"
)
PEAK = NotObservable(
    "MindSpore's memory statistics cover device memory pools: on the CPU "
    "mindspore.runtime.max_memory_allocated() and memory_stats() read 0"
)
#: Where every saved tensor is kept: the CPU's memory, MindSpore's device on the CPU.
SPACE = "device"
_BLOCK_CODE = MLP.construct.__code__


def describe(tensor: ms.Tensor) -> tuple[str, str, str]:
    """Its dtype in lower case (`float32`); x is x, an activation computed from x."""
    return str(tensor.dtype).lower(), "x", "computed from x"


#: `classify(by_storage, x, parameters, role)`: saved tensors by storage identity, in
#: MindSpore's words (`hooks_evidence.classify`).
classify = functools.partial(hooks_evidence.classify, describe=describe)


def executor() -> Any:
    """PyNative's one executor, whose `grad` runs every backward pass."""
    from mindspore.graph.api import _pynative_executor

    return _pynative_executor


def _is_leaf_cell(cell: ms.nn.Cell) -> bool:
    # MindSpore's own wrappers (`_WrapCell`, a recompute's) are not the block's layers.
    return not list(cell.cells()) and not type(cell).__name__.startswith("_")


class Watch(hooks_evidence.ObservedCall):
    """What one watched call did (see the module's docstring). `x` and `parameters`
    (canonical order, four per block) are the call's values, framework tensors or arrays."""

    def __init__(self, x: Any, parameters: Iterable[Any] | None):
        super().__init__(ms.Tensor)
        self.x = _values(x)
        self.parameters = None if parameters is None else [_values(p) for p in parameters]
        self.matmuls: Counter = Counter()  # per phase
        self.regions = 0
        self.blocks = BlockRuns()  # keyed by the block cell

    @property
    def phase(self) -> str:
        return "backward" if self.engine.running() else "forward"

    def leaf_ran(self, leaf: Any, output: Any) -> None:
        super().leaf_ran(leaf, output)
        if self.outputs and self.outputs[-1][0] is output:  # named by its place in its block
            place = self.places[id(leaf)] % len(hooks_evidence.ROLE_BY_PLACE)
            self.outputs[-1] = (output, hooks_evidence.ROLE_BY_PLACE[place])

    def cell_called(self, cell: ms.nn.Cell, output: Any) -> None:
        if _is_leaf_cell(cell):
            self.leaf_ran(cell, output)

    def cell_entered(self, cell: ms.nn.Cell) -> None:
        if cell._recompute_cell is not None and not self.engine.running():
            self.regions += 1

    def matmul_ran(self, args: tuple) -> None:
        self.matmuls[self.phase] += 1
        if self.blocks.open and len(args) > 1:
            cell, ran = self.blocks.open[-1]
            kernels = (cell.fc1.weight, cell.fc2.weight)
            ran.extend(m for m, w in zip(MATMULS, kernels, strict=True) if args[1] is w)

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if frame.f_code is not _BLOCK_CODE:
            return
        if event == "call":
            self.blocks.enter(frame.f_locals["self"])
        elif event == "return":
            self.blocks.leave(self.phase, lambda cell: getattr(cell, "block_index", -1))

    def saved_tensors(self) -> tuple:
        if self.parameters is None:
            raise ValueError("saved: the watch was given no parameters")
        found = hooks_evidence.classify_by_values(
            self, self.x, self.parameters, to_numpy=to_host_array, is_leaf=lambda t: True,
            made_by=lambda t: "an op of the call", describe=describe,
        )  # fmt: skip
        return tuple(dataclasses.replace(t, memory_space=SPACE) for t in found)

    def record(self) -> Record:
        """What the call showed (`Record`)."""
        return Record(
            INSTRUMENT,
            METHODS,
            saved=self.saved_tensors(),
            evaluations=tuple(self.blocks.evaluations),
            forward_matmuls=self.matmuls["forward"],
            backward_matmuls=BACKWARD_MATMULS,
            recomputed=dict(self.counts),
            regions=self.regions,
            reruns=RERUNS,
            peak_bytes=PEAK,
            peak_batch_bytes=PEAK,
            peak_fixed_bytes=PEAK,
        )


def _values(value: Any) -> np.ndarray:
    return to_host_array(value) if isinstance(value, ms.Tensor) else np.asarray(value, np.float32)


@contextlib.contextmanager
def watch(x: Any, parameters: Iterable[Any] | None) -> Iterator[Watch]:
    """The hooks around the call in the `with` block; `.record()` after it (`parameters`
    None: given to `.record()`'s caller later, as `observe` does). Everything is put back
    whatever happens."""
    seen = Watch(x, parameters)
    with ms.saved_tensors_hooks(seen.pack, seen.unpack), _hooked(seen):
        yield seen


@contextlib.contextmanager
def _hooked(seen: Watch) -> Iterator[None]:
    owner = executor()
    grad, own = owner.grad, "grad" in vars(owner)
    matmul, call = ms.ops.matmul, ms.nn.Cell.__call__
    previous = sys.getprofile()

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.matmul_ran(args)
        return matmul(*args, **kwargs)

    def called(cell: ms.nn.Cell, *args: Any, **kwargs: Any) -> Any:
        seen.cell_entered(cell)
        output = call(cell, *args, **kwargs)
        seen.cell_called(cell, output)
        return output

    owner.grad, ms.ops.matmul, ms.nn.Cell.__call__ = seen.engine.marked(grad), counted, called
    sys.setprofile(seen.profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
        ms.ops.matmul, ms.nn.Cell.__call__ = matmul, call
        if own:
            owner.grad = grad
        else:
            del owner.grad


def observe(
    call: Callable[[], Any], x: Any, parameters: Callable[[], Iterable[np.ndarray]]
) -> BackwardRecord:
    """The instrument on `call()`, a forward and a backward pass of a port's own code; `x`,
    the values of its input; `parameters()`, called after the call, the parameters' values.
    Its rerun matmuls are the `ops.matmul` calls of the backward pass."""
    with watch(x, None) as seen:
        call()
    seen.parameters = [np.asarray(p, np.float32) for p in parameters()]
    record = seen.record().backward_record()
    return dataclasses.replace(record, rerun_matmuls=seen.matmuls["backward"])


class Peak:
    """The peak of one call: not observable on MindSpore's CPU (`PEAK`)."""

    def record(self) -> Record:
        return Record("MindSpore's memory statistics", {}, peak_bytes=PEAK)


@contextlib.contextmanager
def peak() -> Iterator[Peak]:
    """Around the call in the `with` block: its record says why the peak is not observable."""
    yield Peak()


def backward_of(forward: Callable[[ms.Tensor], ms.Tensor], x: ms.Tensor) -> None:
    """`forward(x)` (the port's own call) through `mindspore.vjp`, then its backward pass
    with a cotangent of ones, into x."""
    out, vjp_fn = ms.vjp(forward, x)
    vjp_fn(ms.ops.ones_like(out))
