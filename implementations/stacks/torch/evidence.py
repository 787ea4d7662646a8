"""torch's instrument for what a backward pass saves and recomputes. Imports torch only.

- **Saved:** an outer `saved_tensors_hooks` around the forward pass sees what
  autograd keeps, deduplicated by storage. A non-reentrant checkpoint keeps
  its inputs through that outer hook and hides everything inside it, so with
  the checkpoint on only x shows; without it, the relu output (an
  activation) and the weights show too.
- **Recomputed:** the stack's counter (`instrument.Ops`) over the backward pass counts the
  operators that run with grad mode on. The engine runs ordinary backward
  formulas with grad mode off, while a checkpoint reruns its forward
  (`aten.addmm`, `aten.relu`) with it on. View operators are left out.
- **Regions:** how many times a checkpoint entered its forward context,
  counted through `checkpoint`'s documented `context_fn` argument.
- **Selective checkpointing** keeps what its policy saves in a cache of its
  own, where no hook sees it: with a `policies.SelectiveCache` as (part of)
  the `context_fn`, the record reads that cache after the forward pass.
- **Roles:** the counter over the forward pass, with `instrument.Roles` observing it, names
  each output by the MLP's role as it is made; a saved tensor takes the role
  of its storage. **Backward matmuls:** the aten matmuls the backward pass
  runs, recomputed or not (`Ops.matmuls`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch

from ...contract import BackwardRecord, SavedTensor
from ...policies import SAVED_NAME
from .instrument import Ops, Roles, SavedTensors
from .policies import SelectiveCache

INSTRUMENT = (
    "outer saved_tensors_hooks (storages, deduplicated) and the selective-checkpoint cache "
    "(read through context_fn); roles by a TorchDispatchMode over the forward; grad-enabled "
    "aten ops and all matmuls in backward (TorchDispatchMode); checkpoint context_fn entries"
)


class RegionCounter:
    """A `context_fn` for `checkpoint` that counts the regions it enters, forward and recompute."""

    def __init__(self):
        self.forward = 0
        self.recomputed = 0

    @contextlib.contextmanager
    def _count(self, attribute: str) -> Iterator[None]:
        setattr(self, attribute, getattr(self, attribute) + 1)
        yield

    def context_fn(self) -> tuple[Any, Any]:
        return self._count("forward"), self._count("recomputed")


def record(
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
