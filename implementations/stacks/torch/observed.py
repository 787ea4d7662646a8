"""torch's instrument on a port's own call: the evidence comes from the very computation whose
values the suite checks. Imports torch only.

`observe(call, x)` runs `call()` (the port's `vjp`, or its `nn_checkpoint_forward` followed by a
backward pass) under one outer `saved_tensors_hooks` and the stack's counter (`instrument.Ops`,
its observers a `Watch` and `Roles`), and never builds a model of its own:

- **Phases.** An op runs in the backward pass when autograd's engine is running a graph task
  (`torch._C._current_graph_task_id() != -1`), and in the forward pass otherwise. A saved
  tensor counts when it is packed in the forward pass; one packed in backward is a recompute's
  own, freed before the pass ends.
- **Origins, by dataflow.** Every tensor an op reads that no op inside the call made is a
  *source*: x's source is the one whose values are x's (the call's x), any other a parameter.
  An op's outputs are an *activation* when any input depends on x, a *parameter* when they
  depend on parameters alone, a *constant* when on nothing. Storages made in the forward pass
  are held until the record is made, so that no address is reused under another origin.
- **Roles** are named as `instrument.Roles` names them (forward pass only).
- **Recomputed:** the non-view ops that run with grad mode on in the backward pass (the engine
  runs backward formulas with grad mode off; a checkpoint reruns its forward with it on).
  **Matmuls** are counted in each pass apart.
- **Regions and selective caches** are counted where the port's checkpoint takes the watch's
  `context_fn` (`active()`): `TorchPort.model` hands it on, a port with a model of its own
  leaves the regions uncounted (None).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from ...contract import BackwardRecord, SavedTensor
from ...policies import SAVED_NAME
from .evidence import RegionCounter
from .instrument import Ops, Roles, SavedTensors
from .policies import SelectiveCache, combine

INSTRUMENT = (
    "the port's own call under an outer saved_tensors_hooks (storages packed in the forward "
    "pass, deduplicated) and one TorchDispatchMode: origins by dataflow from x, roles in the "
    "forward, grad-enabled aten ops and matmuls in the backward"
)

_ORIGINS = ("constant", "parameter", "activation")  # weakest to strongest
_active: list[Watch] = []


def active() -> Watch | None:
    """The watch observing the current call, if any (for a model to hand its `context_fn`)."""
    return _active[-1] if _active else None


class Watch:
    """What one observed call is watched by (see the module's docstring): the stack's counter
    (`ops`), with this watch following origins and `roles` naming tensors as its observers.

    **Arguments:** `x`, the values of the call's input, as numpy.
    """

    def __init__(self, x: np.ndarray):
        self.x = np.asarray(x, np.float32).ravel()
        self.origin: dict[int, str] = {}  # storage -> origin
        self.held: list[torch.Tensor] = []  # the forward pass's storages, kept alive
        self.roles = Roles()
        self.ops = Ops(self, self.roles)
        self.regions = RegionCounter()
        self.caches: list[SelectiveCache] = []
        self.handed = False  # whether a model of the call took `context_fn`
        self._reads_x = False  # whether the op being run reads x
        self._op_origin = "constant"  # what the op being run makes, by what it reads
        self.x_device: torch.device | None = None  # where x lives: "device"; elsewhere "host"

    # -- what a model built for the call hands its checkpoint --------------------------------

    def context_fn(self, policy_fn: Callable | None) -> Callable[[], tuple[Any, Any]]:
        """The `context_fn` that counts regions and, for a selective policy, keeps its cache
        where the record can read it."""
        self.handed = True
        if policy_fn is None:
            return self.regions.context_fn
        cache = SelectiveCache(policy_fn)
        self.caches.append(cache)
        return combine(self.regions.context_fn, cache.context_fn)

    # -- an observer of the forward pass's ops ----------------------------------------------

    def before(self, func: Any, args: Any, kwargs: Any) -> None:
        self._op_origin = self._origin_of(torch.utils._pytree.tree_leaves((args, kwargs)))

    def after(self, func: Any, args: Any, out: Any) -> None:
        origin = self._op_origin
        for tensor in torch.utils._pytree.tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                # A copy of x (clone, a cast, a contiguous reshape) is x still.
                copied = origin == "activation" and self._reads_x and self._is_x(tensor)
                self._label(tensor, "input" if copied else origin)
        self._relabel_mutated(func, args, origin)

    def _origin_of(self, leaves: list[Any]) -> str:
        found, self._reads_x = "constant", False
        for tensor in leaves:
            if isinstance(tensor, torch.Tensor):
                ptr = _storage(tensor)
                if ptr not in self.origin:  # a source: x, or a parameter
                    self._label(tensor, "input" if self._is_x(tensor) else "parameter")
                self._reads_x = self._reads_x or self.origin[ptr] == "input"
                found = _stronger(found, _derived(self.origin[ptr]))
        return found

    def _is_x(self, tensor: torch.Tensor) -> bool:
        if tensor.numel() != self.x.size or tensor.is_complex():
            return False
        values = tensor.detach().to("cpu", torch.float32).reshape(-1).numpy()
        return bool(np.array_equal(values, self.x))

    def _label(self, tensor: torch.Tensor, origin: str) -> None:
        ptr = _storage(tensor)
        if origin == "input" and self.x_device is None:
            self.x_device = tensor.device
        if ptr not in self.origin or self.origin[ptr] != "input":
            self.origin[ptr] = origin
        self.held.append(tensor)

    def _relabel_mutated(self, func: Any, args: Any, origin: str) -> None:
        # An in-place op (copy_, add_) gives its first argument the origin of what it read.
        if func._schema.is_mutable and args and isinstance(args[0], torch.Tensor):
            ptr = _storage(args[0])
            if self.origin.get(ptr) != "input":
                self.origin[ptr] = _stronger(self.origin.get(ptr, "constant"), origin)

    def classify(self, saved: dict[int, torch.Tensor], note: Callable[[int], str]) -> tuple:
        """The saved tensors as `SavedTensor`s, by the origin of their storage."""
        records = []
        for ptr, tensor in saved.items():
            origin = self.origin.get(ptr)
            if origin is None:  # made where no op of the call ran: read as a source
                origin = "input" if self._is_x(tensor) else "parameter"
            shape, dtype = tuple(tensor.shape), str(tensor.dtype).removeprefix("torch.")
            role = "x" if origin == "input" else self.roles.role(ptr)
            where = f", {note(ptr)}" if note(ptr) else ""
            grad_fn = type(tensor.grad_fn).__name__ if tensor.grad_fn is not None else "a leaf"
            text = {
                "input": f"x, saved as {shape}{where}",
                "parameter": f"from the parameters alone, saved as {shape}{where}",
                "constant": f"a constant, saved as {shape}{where}",
                "activation": f"{role + ': ' if role else ''}output of {grad_fn}{where}",
            }[origin]
            space = "device" if tensor.device == self.x_device else "host"
            records.append(
                SavedTensor(
                    shape, dtype, origin, text, role if origin != "parameter" else "", space
                )
            )
        return tuple(records)


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _derived(origin: str) -> str:
    # What an op makes from a tensor of this origin: x itself makes activations.
    return "activation" if origin == "input" else origin


def _stronger(a: str, b: str) -> str:
    return a if _ORIGINS.index(a) >= _ORIGINS.index(b) else b


@contextlib.contextmanager
def _watching(watch: Watch) -> Iterator[None]:
    _active.append(watch)
    try:
        with watch.ops:
            yield
    finally:
        _active.pop()


def observe(
    call: Callable[[], Any],
    x: Any,
    *,
    kept: Callable[[], dict[int, torch.Tensor]] = dict,
    kept_note: str = "",
    regions: Callable[[], int] | None = None,
) -> BackwardRecord:
    """torch's instrument on `call()`, a forward and a backward pass of the port's own code.

    **Arguments:** `call`, the port's call (its `vjp`; or its `nn_checkpoint_forward`, then
    the backward pass); `x`, the values of the call's input (a tensor or an array). For a
    checkpoint that keeps tensors where no saved-tensor hook sees them (a reentrant one's
    node attribute, `reentrant.observe`): `kept()`, those tensors by storage, noted
    `kept_note`, and `regions()`, its regions as counted where it ran (called after the call).
    """
    x_values = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    watch, saves = Watch(x_values), SavedTensors(forward_only=True)
    with torch.autograd.graph.saved_tensors_hooks(saves.pack, saves.unpack), _watching(watch):
        call()
    cached: dict[int, torch.Tensor] = {}
    for cache in watch.caches:
        cached.update(cache.cached())
    outside = kept()

    def note(ptr: int) -> str:
        if ptr in cached:
            return "cached by the selective checkpoint"
        return kept_note if ptr in outside else ""

    saved = watch.classify({**outside, **cached, **saves.by_storage}, note)
    if regions is None:  # only a checkpoint that took the watch's context_fn; else unknown
        regions = (lambda: watch.regions.forward) if watch.handed else (lambda: None)
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=saved,
        recomputed=watch.ops.recomputed(),
        checkpoint_regions=regions(),
        backward_matmuls=watch.ops.matmuls("backward"),
        tags=(SAVED_NAME,) if watch.roles.tagged else (),
        forward_matmuls=watch.ops.matmuls("forward"),
    )


def backward_of(output: torch.Tensor) -> None:
    """The backward pass of `output` with a cotangent of ones, into x and every parameter,
    leaving every leaf's `.grad` as it was (a reentrant checkpoint refuses `autograd.grad`)."""
    leaves = _leaves(output)
    before = [leaf.grad for leaf in leaves]
    try:
        output.backward(torch.ones_like(output))
    finally:
        for leaf, grad in zip(leaves, before, strict=True):
            leaf.grad = grad


def _leaves(output: torch.Tensor) -> list[torch.Tensor]:
    seen, stack, leaves = set(), [output.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            leaves.append(node.variable)
        stack.extend(child for child, _ in node.next_functions)
    return leaves
