"""Paddle's instrument on a port's own call: the evidence comes from the very computation whose
values the suite checks (the port's `vjp`, or its `nn_checkpoint_forward` and a backward pass
of its output). Imports paddle and numpy; builds no model of its own.

- **Phases.** The call runs in its backward pass while Paddle's engine runs one
  (`core.eager.run_backward`, behind `Tensor.backward` and `paddle.autograd.backward`, or
  `core.eager.run_partial_grad`, behind `paddle.grad`), watched for the call's length.
- **Saved:** `paddle.autograd.saved_tensors_hooks(pack, unpack)` around the whole call: every
  tensor autograd keeps in the forward phase, once per storage (one packed in the backward
  phase is a reentrant recompute's own). Origins by values, since no model object is known: a
  leaf whose values are x's is the input, a leaf whose values are a parameter's a parameter,
  anything else (computed in the call, or a copy) an activation, named by the grad node that
  made it.
- **Recomputed:** every leaf `paddle.nn.Layer` (one with no sublayers) that runs in the
  backward phase, by class (`Layer.__call__` watched for the call's length): none without a
  checkpoint; with `recompute`, the whole block again. A port that recomputes with bare
  functions, no layers, shows no recompute.
- **Roles:** the same watch, in the forward phase, names each leaf layer's output by the
  place the layer first ran in (h, a, y); a kept tensor no layer made stays unnamed.
- **Matmuls:** Paddle's operator statistics (`FLAGS_low_precision_op_list`, read with
  `core.get_low_precision_op_list`) count every forward kernel it runs (`matmul_v2`), and no
  grad kernel: the forward pass's matmuls are those counted before the engine's first entry
  (`forward_matmuls`). Those inside the backward pass are a recompute's (`MatmulCount.backward`,
  `rerun_matmuls`); `backward_matmuls` stays None, since the gradient's own
  `matmul_v2_grad` kernels are not in the statistics.
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
from .loaded import paddle

INSTRUMENT = (
    "the port's own call under paddle.autograd.saved_tensors_hooks (storages packed before "
    "its backward pass, deduplicated; x and parameters told by values); leaf layers run "
    "during core.eager.run_backward, by class; roles by leaf layers in the forward; matmul_v2 "
    "kernels by Paddle's operator statistics, before and during the backward pass (a rerun's; "
    "grad kernels are not in them)"
)

#: The forward kernel of a matmul (paddle.nn.functional.linear's, on the CPU).
MATMUL = "matmul_v2"

#: Paddle's engine entry points: the call is in its backward pass while one of these runs.
ENGINE = ("run_backward", "run_partial_grad")


def observe(
    call: Callable[[], Any], x: Any, parameters: Callable[[], Iterable[np.ndarray]]
) -> BackwardRecord:
    """Paddle's instrument on `call()`, a forward and a backward pass of the port's own code.

    **Arguments:** `call`; `x`, the values of the call's input (a tensor or an array);
    `parameters()`, called after the call, the parameters' values as numpy arrays.
    """
    x_values = to_host_array(x) if isinstance(x, paddle.Tensor) else np.asarray(x, np.float32)
    matmuls = MatmulCount()
    with matmuls.counting():
        record = _hooked(matmuls.marking(call), x_values, parameters)
    # backward_matmuls stays None: the gradient's own matmuls are not in the count.
    return dataclasses.replace(
        record, forward_matmuls=matmuls.forward, rerun_matmuls=matmuls.backward
    )


def _hooked(
    call: Callable[[], Any], x_values: np.ndarray, parameters: Callable[[], Iterable[np.ndarray]]
) -> BackwardRecord:
    return hooks_evidence.observe(
        call,
        x_values,
        parameters,
        tensor_type=paddle.Tensor,
        saved_tensors_hooks=paddle.autograd.saved_tensors_hooks,
        entries=[(paddle.base.core.eager, name) for name in ENGINE],
        module_class=paddle.nn.Layer,
        is_leaf_module=lambda layer: not layer.sublayers(),
        to_numpy=to_host_array,
        is_leaf=lambda tensor: tensor.is_leaf,
        made_by=_made_by,
        describe=describe,
        instrument=INSTRUMENT,
    )


class MatmulCount:
    """The `matmul_v2` kernels one call runs, split at its backward pass's start: Paddle's
    operator statistics on for the call's length, the count read when the engine is first
    entered (`marking` puts the reading on its entry points) and when the call is done."""

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
        flag = "FLAGS_low_precision_op_list"
        before = paddle.get_flags([flag])[flag]
        paddle.set_flags({flag: 1})
        paddle.base.core.clear_low_precision_op_list()
        try:
            yield
            self.total = _matmuls()
        finally:
            paddle.base.core.clear_low_precision_op_list()
            paddle.set_flags({flag: before})

    def marking(self, call: Callable[[], Any]) -> Callable[[], Any]:
        """`call`, with the engine's entry points reading the forward count on first entry."""
        engine = paddle.base.core.eager

        def marked() -> Any:
            originals = {name: getattr(engine, name) for name in ENGINE}

            def entered(run: Callable) -> Callable:
                def run_counted(*args: Any, **kwargs: Any) -> Any:
                    if self.at_backward is None:
                        self.at_backward = _matmuls()
                    return run(*args, **kwargs)

                return run_counted

            try:
                for name, run in originals.items():
                    setattr(engine, name, entered(run))
                return call()
            finally:
                for name, run in originals.items():
                    setattr(engine, name, run)

        return marked


def _matmuls() -> int:
    # Each entry reads "fp16,bf16,fp32,other" calls of the op.
    counts = paddle.base.core.get_low_precision_op_list().get(MATMUL, "0,0,0,0")
    return sum(int(n) for n in counts.split(","))


def _made_by(tensor: paddle.Tensor) -> str:
    node = tensor.grad_fn
    return node.name() if node is not None else "no differentiable op"


def backward_of(output: paddle.Tensor) -> None:
    """The backward pass of `output` with a cotangent of ones."""
    output.backward(paddle.ones_like(output))
