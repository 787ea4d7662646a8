"""torch's one dispatch-mode counter, and what it composes with. Imports torch only.

- `Ops`: the one `TorchDispatchMode` of the torch stack. It counts every non-view aten
  operator that runs under it by phase (`"backward"` while autograd's engine runs a graph
  task on this thread, `"forward"` otherwise) and by grad mode, and hands each operator of
  the forward pass to its observers. Its users read what they need from one count: matmuls
  per phase (`matmuls`), the operators a checkpoint reruns (`recomputed`: grad mode on in the
  backward pass, where the engine runs backward formulas with it off), any operator
  (`count`).
- Observers (plain objects with `before(func, args, kwargs)` and `after(func, args, out)`):
  `Roles` names the MLP's tensors by role; `observed.Origins` follows x through dataflow.
- `SavedTensors`: the pack hook for `saved_tensors_hooks`, once per storage.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .policies import MATMUL_NAMES, MATMULS, TAG

PHASES = ("forward", "backward")
_RELU = torch.ops.aten.relu.default
_BIASED = frozenset({torch.ops.aten.addmm.default, torch.ops.aten.addmv.default})


def in_backward() -> bool:
    """Whether autograd's engine is running a backward pass on this thread."""
    return torch._C._current_graph_task_id() != -1


class Ops(TorchDispatchMode):
    """Counts the non-view aten operators that run under it, by phase and grad mode.

    **Arguments:** `observers`, each told of every operator of the forward pass
    (`before` it runs, `after` with its output).
    """

    def __init__(self, *observers: Any):
        super().__init__()
        self.observers = observers
        self.counts: Counter[tuple[str, str, bool]] = Counter()  # (phase, op, grad) -> n

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        phase = PHASES[in_backward()]
        told = self.observers if phase == "forward" else ()
        for observer in told:
            observer.before(func, args, kwargs)
        out = func(*args, **kwargs)
        if not func.is_view:
            self.counts[phase, str(func.overloadpacket), torch.is_grad_enabled()] += 1
        for observer in told:
            observer.after(func, args, out)
        return out

    def count(
        self, ops: Iterable[str] | None = None, phase: str | None = None, grad: bool | None = None
    ) -> int:
        """How many of `ops` (packet names, `"aten.addmm"`; all if None) ran in `phase` (both if
        None) with grad mode `grad` (either if None)."""
        return sum(self.by_op(phase, grad, ops).values())

    def by_op(
        self, phase: str | None = None, grad: bool | None = None, ops: Iterable[str] | None = None
    ) -> dict[str, int]:
        """Each operator's count (packet name -> n) in `phase`, with grad mode `grad` (None:
        any), of `ops` only if given."""
        wanted = None if ops is None else frozenset(ops)
        found: Counter[str] = Counter()
        for (ran_in, op, grad_on), n in self.counts.items():
            if phase not in (None, ran_in) or grad not in (None, grad_on):
                continue
            if wanted is None or op in wanted:
                found[op] += n
        return dict(found)

    def matmuls(self, phase: str | None = None) -> int:
        """The aten matmuls (`policies.MATMULS`) that ran in `phase` (both if None)."""
        return self.count(MATMUL_NAMES, phase)

    def recomputed(self) -> dict[str, int]:
        """What a checkpoint reran: the operators of the backward pass with grad mode on."""
        return self.by_op("backward", grad=True)


class Roles:
    """Names the MLP's tensors by role (`policies.ROLES`) as the forward pass makes them: an
    observer of `Ops`.

    The MLP's forward is one chain: what comes before relu is the first
    layer (a bare matmul's output is d1; once a bias is in, by `addmm` or
    an add, or through the `tag` operator, it is h), relu's output is a,
    a boolean is relu's mask, and what comes after relu is the second layer
    (y). Views are left out: they hold their base's storage. With
    `functional_only`, an operator that writes into its arguments (FSDP2's
    all-gathers, copies) names nothing.
    """

    def __init__(self, functional_only: bool = False):
        self.by_storage: dict[int, str] = {}
        self.functional_only = functional_only
        self._after_relu = False
        self.tagged = False  # whether the `tag` operator (torch's stand-in for a name) ran

    def before(self, func: Any, args: Any, kwargs: Any) -> None:
        pass

    def after(self, func: Any, args: Any, out: Any) -> None:
        self.note(func, out)

    def note(self, func: Any, out: Any) -> None:
        """Names `out`, the output of `func`, by its role."""
        self.tagged = self.tagged or func is TAG
        if func.is_view or not isinstance(out, torch.Tensor):
            return
        if self.functional_only and func._schema.is_mutable:
            return
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


class SavedTensors:
    """Pack hook for `saved_tensors_hooks`: notes every saved tensor, once per storage; with
    `forward_only`, those packed in the forward pass only (a recompute's own are freed
    before the backward pass ends)."""

    def __init__(self, forward_only: bool = False):
        self.by_storage: dict[int, torch.Tensor] = {}
        self.forward_only = forward_only

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        if not (self.forward_only and in_backward()):
            self.by_storage.setdefault(tensor.untyped_storage().data_ptr(), tensor)
        return tensor

    @staticmethod
    def unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor
