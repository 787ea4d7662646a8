"""MindSpore's instrument (PyNative mode) on a port's own call: the evidence comes from the very
computation whose values the suite checks (the port's `vjp`, or its `nn_checkpoint_forward` and
a backward pass of its output). Imports mindspore and numpy; builds no cell of its own.

- **Phases.** The call runs in its backward pass while PyNative's executor computes a gradient
  (`_pynative_executor.grad`, behind `mindspore.vjp`'s `vjp_fn`, `mindspore.grad` and
  `mindspore.value_and_grad`), watched for the call's length.
- **Saved:** `mindspore.saved_tensors_hooks(pack, unpack)` around the whole call: every tensor
  autograd keeps in the forward phase, once per storage (one packed in the backward phase is
  a recompute's own). Origins by values, since no model object is known: a tensor no leaf
  cell made whose values are x's is the input, one whose values are a parameter's a
  parameter, anything else (a leaf cell's output, or computed by bare ops) an activation.
- **Recomputed:** every leaf cell (one with no child cells, MindSpore's own wrappers left out)
  that runs in the backward phase, by class (`Cell.__call__` watched for the call's length):
  none without recompute; with `Cell.recompute()`, the whole block again. A port that
  recomputes with bare functions, no cells, shows no recompute.
- **Roles:** the same watch, in the forward phase, names each leaf cell's output by the place
  the cell first ran in (h, a, y); a kept tensor no cell made stays unnamed.
- **Matmuls:** every call of `mindspore.ops.matmul` (the functional the layers call, looked
  up at each call) for the call's length: those before the executor's first gradient are the
  forward pass's (`forward_matmuls`); those inside it are a recompute's (`MatmulCount.backward`,
  `rerun_matmuls`). `backward_matmuls` stays None: the gradient's own MatMul kernels run
  in PyNative's C++ backward, which no hook reaches. A port that multiplies by another op
  shows no matmul.
- **Regions:** not counted (None).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ...contract import BackwardRecord
from .. import hooks_evidence
from .arrays import to_host_array
from .evidence import describe
from .loaded import ms

INSTRUMENT = (
    "the port's own call under mindspore.saved_tensors_hooks (storages packed before its "
    "backward pass, deduplicated; x and parameters told by values); leaf cells run during "
    "_pynative_executor.grad, by class; roles by leaf cells in the forward; "
    "mindspore.ops.matmul calls before and during the gradient (a rerun's; the gradient's "
    "own kernels are C++)"
)


def _executor() -> Any:
    from mindspore.graph.api import _pynative_executor  # the one PyNative executor

    return _pynative_executor


def _is_leaf_cell(cell: ms.nn.Cell) -> bool:
    # MindSpore's own wrappers (`_WrapCell`, a recompute's) are not the port's layers.
    return not list(cell.cells()) and not type(cell).__name__.startswith("_")


def observe(
    call: Callable[[], Any], x: Any, parameters: Callable[[], Iterable[np.ndarray]]
) -> BackwardRecord:
    """MindSpore's instrument on `call()`, a forward and a backward pass of the port's own
    code.

    **Arguments:** `call`; `x`, the values of the call's input (a tensor or an array);
    `parameters()`, called after the call, the parameters' values as numpy arrays.
    """
    x_values = to_host_array(x) if isinstance(x, ms.Tensor) else np.asarray(x, np.float32)
    matmuls = MatmulCount()
    with matmuls.counting():
        record = _hooked(call, x_values, parameters)
    # backward_matmuls stays None: the gradient's own matmuls are not in the count.
    return dataclasses.replace(
        record, forward_matmuls=matmuls.forward, rerun_matmuls=matmuls.backward
    )


class MatmulCount:
    """The `mindspore.ops.matmul` calls of one call, split at its first gradient: the
    functional and the executor's `grad` wrapped for the call's length, put back after."""

    def __init__(self):
        self.at_backward: int | None = None
        self.total = 0

    @property
    def forward(self) -> int:
        return self.total if self.at_backward is None else self.at_backward

    @property
    def backward(self) -> int:
        return self.total - self.forward

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        matmul, executor = ms.ops.matmul, _executor()
        grad, own = executor.grad, "grad" in vars(executor)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.total += 1
            return matmul(*args, **kwargs)

        def entered(*args: Any, **kwargs: Any) -> Any:
            if self.at_backward is None:
                self.at_backward = self.total
            return grad(*args, **kwargs)

        ms.ops.matmul, executor.grad = counted, entered
        try:
            yield
        finally:
            ms.ops.matmul = matmul
            if own:
                executor.grad = grad
            else:
                del executor.grad


def _hooked(
    call: Callable[[], Any], x_values: np.ndarray, parameters: Callable[[], Iterable[np.ndarray]]
) -> BackwardRecord:
    return hooks_evidence.observe(
        call,
        x_values,
        parameters,
        tensor_type=ms.Tensor,
        saved_tensors_hooks=ms.saved_tensors_hooks,
        entries=[(_executor(), "grad")],
        module_class=ms.nn.Cell,
        is_leaf_module=_is_leaf_cell,
        to_numpy=to_host_array,
        is_leaf=lambda tensor: True,  # no autograd graph in sight: the values decide
        made_by=lambda tensor: "an op of the call",
        describe=describe,
        instrument=INSTRUMENT,
    )


def backward_of(forward: Callable[[ms.Tensor], ms.Tensor], x: ms.Tensor) -> None:
    """`forward(x)` (the port's own call) through `mindspore.vjp`, then its backward pass
    with a cotangent of ones, into x."""
    out, vjp_fn = ms.vjp(forward, x)
    vjp_fn(ms.ops.ones_like(out))
