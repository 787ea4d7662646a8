"""torch's instrument for what a backward pass saves and recomputes. Imports torch only.

- **Saved:** an outer `saved_tensors_hooks` around the forward pass sees what
  autograd keeps, deduplicated by storage. A non-reentrant checkpoint keeps
  its inputs through that outer hook and hides everything inside it, so with
  the checkpoint on only x shows; without it, the relu output (an
  activation) and the weights show too.
- **Recomputed:** a `TorchDispatchMode` over the backward pass counts the
  operators that run with grad mode on. The engine runs ordinary backward
  formulas with grad mode off, while a checkpoint reruns its forward
  (`aten.addmm`, `aten.relu`) with it on. View operators are left out.
- **Regions:** how many times a checkpoint entered its forward context,
  counted through `checkpoint`'s documented `context_fn` argument.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ...contract import BackwardRecord, SavedTensor

INSTRUMENT = (
    "outer saved_tensors_hooks (storages, deduplicated); grad-enabled aten ops "
    "in backward (TorchDispatchMode); checkpoint context_fn entries"
)


class SavedTensors:
    """Pack hook for `saved_tensors_hooks`: notes every saved tensor, once per storage."""

    def __init__(self):
        self.by_storage: dict[int, torch.Tensor] = {}

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        self.by_storage.setdefault(tensor.untyped_storage().data_ptr(), tensor)
        return tensor

    @staticmethod
    def unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor


class GradModeOps(TorchDispatchMode):
    """Counts the non-view aten operators that run while grad mode is on."""

    def __init__(self):
        super().__init__()
        self.counts: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if torch.is_grad_enabled() and not func.is_view:
            self.counts[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


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
) -> BackwardRecord:
    """Run `run_forward() -> (output, model)` under the hooks, then its backward pass.

    `x` is the leaf input (it requires grad); `regions` is the counter whose
    `context_fn` the model's checkpoint was given.
    """
    saved = SavedTensors()
    with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack):
        out, model = run_forward()
    parameters = list(model.parameters())
    cotangent = torch.ones_like(out)  # made outside the mode, so it is not counted
    with GradModeOps() as ops:
        # A frozen parameter (requires_grad False) has no gradient to take.
        wanted = [p for p in parameters if p.requires_grad]
        torch.autograd.grad(out, [x, *wanted], cotangent)
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=classify(saved.by_storage, x, parameters),
        recomputed=dict(ops.counts),
        checkpoint_regions=regions.forward,
    )


def classify(
    by_storage: Mapping[int, torch.Tensor],
    x: torch.Tensor,
    parameters: Iterable[torch.Tensor],
    where: Callable[[int], str] = lambda ptr: "",
) -> tuple[SavedTensor, ...]:
    """Saved tensors, one per storage, as `SavedTensor`s: x's storage is the input, a
    parameter's is a parameter, anything else an activation. `where(ptr)` adds to the note."""
    input_ptr = x.untyped_storage().data_ptr()
    names = {p.untyped_storage().data_ptr(): tuple(p.shape) for p in parameters}
    saved = []
    for ptr, tensor in by_storage.items():
        shape, dtype = tuple(tensor.shape), str(tensor.dtype).removeprefix("torch.")
        grad_fn = type(tensor.grad_fn).__name__ if tensor.grad_fn is not None else "a leaf"
        suffix = f", {where(ptr)}" if where(ptr) else ""
        if ptr == input_ptr:
            saved.append(SavedTensor(shape, dtype, "input", f"x, saved as {shape}{suffix}"))
        elif ptr in names:
            note = f"parameter of shape {names[ptr]}, saved as {shape}{suffix}"
            saved.append(SavedTensor(shape, dtype, "parameter", note))
        else:
            note = f"output of {grad_fn}{suffix}"
            saved.append(SavedTensor(shape, dtype, "activation", note))
    return tuple(saved)
