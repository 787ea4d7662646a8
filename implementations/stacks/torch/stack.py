"""The torch `Stack`: tensors, the precision pin, the numpy init, and torch's instrument on a
model built for the record (`record`, `model_record`, `classify`). Imports torch (and numpy).

`model_record` runs a forward pass of a model under the hooks, then its backward pass: the
saved tensors by storage (an outer `saved_tensors_hooks`, and a selective checkpoint's cache
read through its `SelectiveCache`), what reruns with grad mode on and the matmuls of the
backward pass (`instrument.Ops`), the regions the model's checkpoint entered (through the
`RegionCounter` it was handed), the roles by `instrument.Roles`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from ...contract import BackwardRecord, SavedTensor
from ...policies import SAVED_NAME
from ..numpy import on_numpy_init
from . import arrays
from .instrument import Ops, RegionCounter, Roles, SavedTensors
from .policies import SelectiveCache

INSTRUMENT = (
    "outer saved_tensors_hooks (storages, deduplicated) and the selective-checkpoint cache "
    "(read through context_fn); roles by a TorchDispatchMode over the forward; grad-enabled "
    "aten ops and all matmuls in backward (TorchDispatchMode); checkpoint context_fn entries"
)

#: `run(x, context_fn) -> (output, model)`: a forward pass whose checkpoint takes `context_fn`.
Run = Callable[[torch.Tensor, Callable], tuple[torch.Tensor, torch.nn.Module]]


def record(run: Run, x: Any, cache: SelectiveCache | None = None) -> BackwardRecord:
    """torch's instrument on one forward and backward pass of `run`.

    **Arguments:**

    - `run(x, context_fn) -> (output, model)`: the forward pass. It must
      hand `context_fn` to its `torch.utils.checkpoint` call as
      `context_fn=` (that is how checkpoint regions are counted), and
      return the module whose `parameters()` the pass used.
    - `x`: the input, checked and copied into a leaf tensor that requires grad.
    - `cache`: the selective checkpoint's cache, when `run`'s checkpoint has a
      policy (its `context_fn` must be part of the one `run` passes on).

    The forward pass runs under an outer `saved_tensors_hooks` (what
    autograd keeps), the backward pass, `torch.autograd.grad` of the
    output against x and every parameter that requires grad with a
    cotangent of ones, under a `TorchDispatchMode` (what reruns with
    grad mode on, that is, inside a checkpoint).
    """
    regions = RegionCounter()
    x = arrays.leaf_input(x)
    return model_record(lambda: run(x, regions.context_fn), x, regions, cache)


def model_record(
    run_forward: Callable[[], tuple[torch.Tensor, torch.nn.Module]],
    x: torch.Tensor,
    regions: RegionCounter,
    cache: SelectiveCache | None = None,
) -> BackwardRecord:
    """Run `run_forward() -> (output, model)` under the hooks, then its backward pass.

    `x` is the leaf input (it requires grad); `regions` is the counter whose
    `context_fn` the model's checkpoint was given; `cache`, the selective
    checkpoint's cache, if its `context_fn` was given too.
    """
    saved, roles = SavedTensors(), Roles()
    with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack), Ops(roles):
        out, model = run_forward()
    # Read before the backward pass, which marks every cache entry consumed.
    cached = {} if cache is None else cache.cached()
    parameters = list(model.parameters())
    cotangent = torch.ones_like(out)  # made outside the mode, so it is not counted
    with Ops() as ops:
        # A frozen parameter (requires_grad False) has no gradient to take.
        wanted = [p for p in parameters if p.requires_grad]
        torch.autograd.grad(out, [x, *wanted], cotangent)

    def where(ptr: int) -> str:
        return "cached by the selective checkpoint" if ptr in cached else ""

    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=classify({**cached, **saved.by_storage}, x, parameters, where, roles.role),
        recomputed=ops.by_op(grad=True),
        checkpoint_regions=regions.forward,
        backward_matmuls=ops.matmuls(),
        tags=(SAVED_NAME,) if roles.tagged else (),  # the tag operator stands for the name
    )


def classify(
    by_storage: Mapping[int, torch.Tensor],
    x: torch.Tensor,
    parameters: Iterable[torch.Tensor],
    where: Callable[[int], str] = lambda ptr: "",
    role: Callable[[int], str] = lambda ptr: "",
) -> tuple[SavedTensor, ...]:
    """Saved tensors, one per storage, as `SavedTensor`s: x's storage is the input, a
    parameter's is a parameter, anything else an activation. `where(ptr)` adds to the note;
    `role(ptr)` names an activation's role ("" where unknown). The memory space is "device"
    for a tensor on x's device, "host" for one moved to the CPU from elsewhere."""
    input_ptr = x.untyped_storage().data_ptr()
    names = {p.untyped_storage().data_ptr(): tuple(p.shape) for p in parameters}
    saved = []
    for ptr, tensor in by_storage.items():
        shape, dtype = tuple(tensor.shape), str(tensor.dtype).removeprefix("torch.")
        grad_fn = type(tensor.grad_fn).__name__ if tensor.grad_fn is not None else "a leaf"
        suffix = f", {where(ptr)}" if where(ptr) else ""
        space = "device" if tensor.device == x.device else "host"
        if ptr == input_ptr:
            note = f"x, saved as {shape}{suffix}"
            saved.append(SavedTensor(shape, dtype, "input", note, "x", space))
        elif ptr in names:
            note = f"parameter of shape {names[ptr]}, saved as {shape}{suffix}"
            saved.append(SavedTensor(shape, dtype, "parameter", note, "", space))
        else:
            named = role(ptr)
            note = f"{named + ': ' if named else ''}output of {grad_fn}{suffix}"
            saved.append(SavedTensor(shape, dtype, "activation", note, named, space))
    return tuple(saved)


#: torch: tensors to and from numpy, `set_float32_matmul_precision`, Flax's init in numpy
#: (torch has none of its own to run), saved-tensor hooks (`record(run, x)`, above).
STACK = on_numpy_init("torch", arrays, record, ("torch",))
