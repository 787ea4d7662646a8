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
- **Selective checkpointing** keeps what its policy saves in a cache of its
  own, where no hook sees it: with a `policies.SelectiveCache` as (part of)
  the `context_fn`, the record reads that cache after the forward pass.
- **Roles:** a `TorchDispatchMode` over the forward pass names each output
  by the MLP's role as it is made (`Roles`); a saved tensor takes the role
  of its storage. **Backward matmuls:** the aten matmuls the backward pass
  runs, recomputed or not (`GradModeOps.matmuls`).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ...contract import BackwardRecord, SavedTensor
from ...policies import SAVED_NAME
from .policies import MATMULS, TAG, SelectiveCache

INSTRUMENT = (
    "outer saved_tensors_hooks (storages, deduplicated) and the selective-checkpoint cache "
    "(read through context_fn); roles by a TorchDispatchMode over the forward; grad-enabled "
    "aten ops and all matmuls in backward (TorchDispatchMode); checkpoint context_fn entries"
)
_RELU = torch.ops.aten.relu.default
_BIASED = frozenset({torch.ops.aten.addmm.default, torch.ops.aten.addmv.default})


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
    """Counts the non-view aten operators that run while grad mode is on (`counts`), and
    every matmul, grad mode on or off (`matmuls`)."""

    def __init__(self):
        super().__init__()
        self.counts: Counter = Counter()
        self.matmuls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if torch.is_grad_enabled() and not func.is_view:
            self.counts[str(func.overloadpacket)] += 1
        self.matmuls += func in MATMULS
        return func(*args, **(kwargs or {}))


class Roles(TorchDispatchMode):
    """Names the MLP's tensors by role (`policies.ROLES`) as the forward pass makes them.

    The MLP's forward is one chain: what comes before relu is the first
    layer (a bare matmul's output is d1; once a bias is in, by `addmm` or
    an add, or through the `tag` operator, it is h), relu's output is a,
    a boolean is relu's mask, and what comes after relu is the second layer
    (y). Views are left out: they hold their base's storage.
    """

    def __init__(self):
        super().__init__()
        self.by_storage: dict[int, str] = {}
        self._after_relu = False
        self.tagged = False  # whether the `tag` operator (torch's stand-in for a name) ran

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.note(func, out)
        return out

    def note(self, func: Any, out: Any) -> None:
        """Names `out`, the output of `func`, by its role."""
        self.tagged = self.tagged or func is TAG
        if not func.is_view and isinstance(out, torch.Tensor):
            # The latest tensor made at an address names it: the caching allocator hands a
            # freed intermediate's memory (d1, once the bias is added) to a later one (a), and
            # a saved tensor's memory is never handed on while it is saved.
            self.by_storage[out.untyped_storage().data_ptr()] = self._role(func, out)

    def _role(self, func: Any, out: torch.Tensor) -> str:
        if func is _RELU:
            self._after_relu = True
            return "a"
        if out.dtype == torch.bool:
            return "mask"
        if self._after_relu:
            return "y"
        # A bare matmul (mm, mv) is d1; addmm, an add, the tag operator: h.
        return "d1" if func in MATMULS and func not in _BIASED else "h"

    def role(self, ptr: int) -> str:
        return self.by_storage.get(ptr, "")


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
    with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack), roles:
        out, model = run_forward()
    # Read before the backward pass, which marks every cache entry consumed.
    cached = {} if cache is None else cache.cached()
    parameters = list(model.parameters())
    cotangent = torch.ones_like(out)  # made outside the mode, so it is not counted
    with GradModeOps() as ops:
        # A frozen parameter (requires_grad False) has no gradient to take.
        wanted = [p for p in parameters if p.requires_grad]
        torch.autograd.grad(out, [x, *wanted], cotangent)

    def where(ptr: int) -> str:
        return "cached by the selective checkpoint" if ptr in cached else ""

    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=classify({**cached, **saved.by_storage}, x, parameters, where, roles.role),
        recomputed=dict(ops.counts),
        checkpoint_regions=regions.forward,
        backward_matmuls=ops.matmuls,
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
