"""torch's instrument: contexts around the very call that is checked, and the one dispatch-mode
counter they share. Imports torch and numpy; builds no model of its own.

`watch(x, parameters)` and `peak()` watch the block's call (`block.vjp`, through
`implementations.measuring.driver`) and give a `Record`; `observe(call, x)` watches a port's
own call (its `vjp`, or its `nn_checkpoint_forward` then `backward_of` its output) and gives the
`BackwardRecord` (e), (j) and (k) read. Both run the call under one outer
`saved_tensors_hooks` and `Ops`, with a `Watch` observing it:

- **Phases.** An op runs in the backward pass when autograd's engine is running a graph task
  (`torch._C._current_graph_task_id() != -1`), and in the forward pass otherwise. A saved
  tensor counts when it is packed in the forward pass; one packed in backward is a recompute's
  own, freed before the pass ends.
- **Origins, by dataflow.** Every tensor an op reads that no op inside the call made is a
  *source*: x's source is the one whose values are x's, any other a parameter. An op's outputs
  are an *activation* when any input depends on x, a *parameter* when they depend on
  parameters alone, a *constant* when on nothing. Storages made in the forward pass are held
  until the record is made, so that no address is reused under another origin.
- **Roles** are named as `Roles` names them (forward pass only). **Memory space:** `device`
  for a tensor where x is, `host` elsewhere.
- **Recomputed:** the non-view ops that run with grad mode on in the backward pass (the engine
  runs backward formulas with grad mode off; a checkpoint reruns its forward with it on).
  **Matmuls** (`policies.MATMULS`) are counted in each pass apart.
- **Evaluations** (`watch`): each block's matmuls as they run, the block told by its kernel's
  storage (`w1`: `x@W1`, a new evaluation; `w2`: `a@W2`, the same one), in the forward pass
  and in the backward pass's reruns (grad mode on). A rerun stopped early (torch's early stop)
  is an evaluation with `a@W2` skipped.
- **Regions, reruns, selective caches** are counted where the call's checkpoint takes the
  watch's `context_fn` (`active()`): the block's regions, `TorchPort.model`, and a port that
  hands it on (docs/PORTING.md) do. A call whose checkpoints do not leaves its regions not
  observable; a selective checkpoint whose cache the watch was not handed is seen being made
  (`_CachingTorchDispatchMode`), and the record says that its cache is not observable.
- **Peak** (`peak`): torch's profiler memory events (`profile_memory=True`) over the call:
  the most bytes alive from the start of its outermost `torch.autograd.grad` or `backward`
  (a reentrant checkpoint refuses `grad`; marked by an allocation of its own) to its return,
  above the bytes alive before the call; what the forward pass left is alive at the start.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch
from torch.utils import checkpoint as torch_checkpoint
from torch.utils._python_dispatch import TorchDispatchMode

from ...contract import BackwardRecord, SavedTensor
from ...measuring.record import MATMULS as BLOCK_MATMULS
from ...measuring.record import Evaluation, NotObservable, Record
from ...policies import SAVED_NAME
from .policies import MATMUL_NAMES, MATMULS, TAG, SelectiveCache, combine

INSTRUMENT = (
    "the port's own call under an outer saved_tensors_hooks (storages packed in the forward "
    "pass, deduplicated) and one TorchDispatchMode: origins by dataflow from x, roles in the "
    "forward, grad-enabled aten ops and matmuls in the backward"
)
WATCH = (
    "the block's call under an outer saved_tensors_hooks (storages packed in the forward "
    "pass, deduplicated) and one TorchDispatchMode; regions and selective caches through the "
    "watch's context_fn"
)
PEAK = (
    "torch profiler memory events (profile_memory=True) from the outermost "
    "torch.autograd.grad's (or backward's) start to its return, above the bytes alive before "
    "the call"
)
METHODS = {
    "saved": "storages packed by an outer saved_tensors_hooks in the forward pass, and a "
    "selective checkpoint's cache read through the watch's context_fn",
    "evaluations": "aten matmuls reading a block's w1 (a new evaluation) or w2 storage, "
    "forward pass and grad-enabled backward reruns",
    "forward_matmuls": "aten matmuls before autograd's engine runs (TorchDispatchMode)",
    "backward_matmuls": "aten matmuls while autograd's engine runs (TorchDispatchMode)",
    "recomputed": "non-view aten ops with grad mode on in the backward pass",
    "regions": "the watch's context_fn: forward contexts entered in the forward pass",
    "reruns": "the watch's context_fn: recompute contexts entered",
}
#: Why a port's selective checkpoint hides its cache, and how to hand the watch on.
UNSEEN_CACHE = (
    "a selective checkpoint's cache (its MUST_SAVE outputs): the port's checkpoint did not "
    "take the watch's context_fn, so what the policy saves is not in the saved set; hand "
    "instrument.active().context_fn(policy_fn) to checkpoint(context_fn=...) "
    "(docs/PORTING.md, Remat policies)"
)

PHASES = ("forward", "backward")
_ORIGINS = ("constant", "parameter", "activation")  # weakest to strongest
_RELU = torch.ops.aten.relu.default
_BIASED = frozenset({torch.ops.aten.addmm.default, torch.ops.aten.addmv.default})
_aten = torch.ops.aten
#: The operators whose output is a copy of what they read (a clone, a cast, a reshape): of x,
#: x still. Any other op's output is what it computed, whatever its values (x @ w1 + b1 with
#: w1, b1 and x all zero equals x).
_COPIES = frozenset(
    {
        *(_aten.clone, _aten._to_copy, _aten.lift_fresh, _aten.lift_fresh_copy, _aten.copy),
        *(_aten.detach, _aten.alias, _aten.view, _aten._unsafe_view, _aten.reshape),
        *(_aten.expand, _aten.unsqueeze, _aten.squeeze, _aten.t, _aten.transpose),
    }
)


def in_backward() -> bool:
    """Whether autograd's engine is running a backward pass on this thread."""
    return torch._C._current_graph_task_id() != -1


class Ops(TorchDispatchMode):
    """Counts the non-view aten operators that run under it, by phase and grad mode.

    **Arguments:** `observers`, each told of every operator of the forward pass
    (`before` it runs, `after` with its output); `throughout`, observers told of every
    operator of either pass.
    """

    def __init__(self, *observers: Any, throughout: tuple = ()):
        super().__init__()
        self.observers, self.throughout = observers, throughout
        self.counts: Counter[tuple[str, str, bool]] = Counter()  # (phase, op, grad) -> n

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        phase = PHASES[in_backward()]
        told = (*self.observers, *self.throughout) if phase == "forward" else self.throughout
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


class RegionCounter:
    """A `context_fn` for `checkpoint` that counts the regions it enters, forward and recompute
    (`forward` counts an inner region entered by its outer's rerun too; `forward_pass`, those
    entered while autograd's engine is not running only)."""

    def __init__(self):
        self.forward = 0
        self.forward_pass = 0
        self.recomputed = 0

    def entered(self, attribute: str = "forward") -> None:
        """A region entered (`forward`) or rerun (`recomputed`)."""
        setattr(self, attribute, getattr(self, attribute) + 1)
        if attribute == "forward" and not in_backward():
            self.forward_pass += 1

    @contextlib.contextmanager
    def _count(self, attribute: str) -> Iterator[None]:
        self.entered(attribute)
        yield

    def context_fn(self) -> tuple[Any, Any]:
        return self._count("forward"), self._count("recomputed")


class Evaluations:
    """The blocks' evaluations as their matmuls run, an observer of `Ops` in both passes: a
    matmul reading block i's `w1` storage starts an evaluation of block i, one reading its `w2`
    is that evaluation's second. In the backward pass, only a rerun's: grad mode on, or inside
    `rerunning` (a reentrant checkpoint's forward entered by its outer's rerun runs its body
    with grad mode off)."""

    def __init__(self, parameters: Iterable[torch.Tensor]):
        self.kernels = {
            _storage(p): (i // 4, BLOCK_MATMULS[i % 4 // 2])
            for i, p in enumerate(parameters)
            if i % 2 == 0
        }
        self.found: list[tuple[int, str, list[str]]] = []
        self.rerunning = 0  # open reentrant forwards inside the backward pass

    @contextlib.contextmanager
    def rerun(self) -> Iterator[None]:
        """The `with` block's matmuls in the backward pass are a rerun's, whatever grad mode."""
        self.rerunning += 1
        try:
            yield
        finally:
            self.rerunning -= 1

    def before(self, func: Any, args: Any, kwargs: Any) -> None:
        pass

    def after(self, func: Any, args: Any, out: Any) -> None:
        rerun = torch.is_grad_enabled() or self.rerunning
        if func not in MATMULS or (in_backward() and not rerun):
            return
        found = next(
            (self.kernels[p] for p in map(_storage, _tensors(args)) if p in self.kernels), None
        )
        if found is None:
            return
        block, matmul = found
        phase = PHASES[in_backward()]
        last = self.found[-1] if self.found else None
        if matmul != BLOCK_MATMULS[0] and last and last[:2] == (block, phase):
            last[2].append(matmul)
        else:
            self.found.append((block, phase, [matmul]))

    def record(self) -> tuple[Evaluation, ...]:
        return tuple(Evaluation(block, phase, tuple(ran)) for block, phase, ran in self.found)


class Watch:
    """What one observed call is watched by (see the module's docstring): the stack's counter
    (`ops`), with this watch following origins, `roles` naming tensors and `evaluations`
    (where the call's parameters are known) counting the blocks' matmuls as its observers.

    **Arguments:** `x`, the values of the call's input, as numpy; `parameters`, the call's
    parameters (four a block, canonical order), where the call is the block's.
    """

    def __init__(self, x: np.ndarray, parameters: Iterable[torch.Tensor] = ()):
        self.x = np.asarray(x, np.float32).ravel()
        parameters = tuple(parameters)
        # storage -> origin; the call's known parameters are parameters whatever their values
        self.origin: dict[int, str] = {_storage(p): "parameter" for p in parameters}
        self.held: list[torch.Tensor] = []  # the forward pass's storages, kept alive
        self.roles = Roles()
        self.evaluations = Evaluations(parameters)
        self.ops = Ops(self, self.roles, throughout=(self.evaluations,))
        self.regions = RegionCounter()
        self.caches: list[SelectiveCache] = []
        self.handed = False  # whether a model of the call took `context_fn`
        self.unseen_caches = 0  # selective caches made that the watch was not handed
        self._reads_x_alone = False  # whether the op being run reads x and nothing else
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
                # A copy of x (clone, a cast, a contiguous reshape) is x still: a copying
                # operator that reads x alone, its output x's values.
                copied = (
                    origin == "activation"
                    and self._reads_x_alone
                    and func.overloadpacket in _COPIES
                    and self._is_x(tensor)
                )
                self._label(tensor, "input" if copied else origin)
        self._relabel_mutated(func, args, origin)

    def _origin_of(self, leaves: list[Any]) -> str:
        found, origins = "constant", set()
        for tensor in leaves:
            if isinstance(tensor, torch.Tensor):
                ptr = _storage(tensor)
                if ptr not in self.origin:  # a source: x, or a parameter
                    self._label(tensor, "input" if self._is_x(tensor) else "parameter")
                origins.add(self.origin[ptr])
                found = _stronger(found, _derived(self.origin[ptr]))
        self._reads_x_alone = origins == {"input"}
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

    def record(self, saved: tuple[SavedTensor, ...]) -> Record:
        """The block's call as it ran (`Record`), its saved tensors `saved`."""
        unhanded = NotObservable(
            "the call's checkpoints did not take the watch's context_fn (instrument.active())"
        )
        return Record(
            WATCH,
            METHODS,
            saved=saved,
            evaluations=self.evaluations.record(),
            forward_matmuls=self.ops.matmuls("forward"),
            backward_matmuls=self.ops.matmuls("backward"),
            recomputed=self.ops.recomputed(),
            regions=self.regions.forward_pass if self.handed else unhanded,
            reruns=self.regions.recomputed if self.handed else unhanded,
        )


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _derived(origin: str) -> str:
    # What an op makes from a tensor of this origin: x itself makes activations.
    return "activation" if origin == "input" else origin


def _stronger(a: str, b: str) -> str:
    return a if _ORIGINS.index(a) >= _ORIGINS.index(b) else b


def _tensors(values: Any) -> Iterator[torch.Tensor]:
    return (t for t in torch.utils._pytree.tree_leaves(values) if isinstance(t, torch.Tensor))


_active: list[Watch] = []


def active() -> Watch | None:
    """The watch observing the current call, if any (for a model to hand its `context_fn`)."""
    return _active[-1] if _active else None


@contextlib.contextmanager
def _watching(watch: Watch) -> Iterator[SavedTensors]:
    """The call under the watch: its forward's saved tensors (yielded), its ops, and every
    selective cache made in it (those the watch was not handed counted as unseen)."""
    saves, caching = SavedTensors(forward_only=True), torch_checkpoint._CachingTorchDispatchMode
    made, original = [], caching.__init__

    def noted(mode: Any, policy_fn: Any, storage: Any, *args: Any, **kwargs: Any) -> None:
        made.append(storage)
        original(mode, policy_fn, storage, *args, **kwargs)

    _active.append(watch)
    caching.__init__ = noted
    try:
        with torch.autograd.graph.saved_tensors_hooks(saves.pack, saves.unpack), watch.ops:
            yield saves
    finally:
        caching.__init__ = original
        _active.pop()
        ours = {id(s) for cache in watch.caches for s in cache.storages}
        watch.unseen_caches = sum(1 for s in made if id(s) not in ours)


def _cached(watch: Watch) -> dict[int, torch.Tensor]:
    found: dict[int, torch.Tensor] = {}
    for cache in watch.caches:
        found.update(cache.cached())
    return found


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
    watch = Watch(x_values)
    with _watching(watch) as saves:
        call()
    cached, outside = _cached(watch), kept()

    def note(ptr: int) -> str:
        if ptr in cached:
            return "cached by the selective checkpoint"
        return kept_note if ptr in outside else ""

    saved = watch.classify({**outside, **cached, **saves.by_storage}, note)
    if regions is None:  # only a checkpoint that took the watch's context_fn; else unknown
        regions = (lambda: watch.regions.forward) if watch.handed else (lambda: None)
    unseen = ()
    if watch.unseen_caches:
        unseen = (str(NotObservable(UNSEEN_CACHE)),)
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=saved,
        recomputed=watch.ops.recomputed(),
        checkpoint_regions=regions(),
        backward_matmuls=watch.ops.matmuls("backward"),
        tags=(SAVED_NAME,) if watch.roles.tagged else (),
        forward_matmuls=watch.ops.matmuls("forward"),
        not_observable=unseen,
    )


class Seen:
    """What `watch` saw: `.record()` once the call is done."""

    def __init__(self, watch: Watch):
        self.watch, self.saved = watch, ()

    def record(self) -> Record:
        return self.watch.record(self.saved)


@contextlib.contextmanager
def watch(
    x: torch.Tensor,
    parameters: Iterable[torch.Tensor],
    *,
    kept: Callable[[], dict[int, torch.Tensor]] = dict,
    kept_note: str = "",
) -> Iterator[Seen]:
    """torch's instrument around the block's call in the `with` block (`block.vjp`); its
    `.record()` after it. `x` and `parameters` are the call's (canonical order, four a block);
    `kept()` and `kept_note` as `observe`'s (a reentrant checkpoint's, DeepSpeed's)."""
    parameters = list(parameters)
    seen = Seen(Watch(x.detach().cpu().numpy(), parameters))
    seen.watch.handed = True  # every region of the block takes the watch's context_fn
    with _watching(seen.watch) as saves:
        yield seen
    cached, outside = _cached(seen.watch), kept()

    def note(ptr: int) -> str:
        if ptr in cached:
            return "cached by the selective checkpoint"
        return kept_note if ptr in outside else ""

    seen.saved = seen.watch.classify({**outside, **cached, **saves.by_storage}, note)


class Peak:
    """The profiler's memory events over the call in `peak()`'s block."""

    def __init__(self):
        self.bytes: int | NotObservable = NotObservable(
            "the call ran no torch.autograd.grad or backward"
        )

    def record(self) -> Record:
        return Record(PEAK, {"peak_bytes": PEAK}, peak_bytes=self.bytes)


@contextlib.contextmanager
def peak(returned_left_out: bool = False) -> Iterator[Peak]:
    """torch's profiler (`profile_memory=True`) around the call in the `with` block; the peak
    from the start of its outermost `torch.autograd.grad` (or `backward`), marked by an
    allocation of its own (the call's function is looked up as it runs: replaced for the
    block's time). With `returned_left_out`, the gradients a `backward` leaves on the leaves
    behind its roots are left out for their whole life (a reentrant checkpoint, which cannot
    run x's path alone, makes them deep inside its nested reruns)."""
    from torch.profiler import ProfilerActivity, profile

    found, autograd, marks, leaves = Peak(), torch.autograd, [], []
    originals = {name: getattr(autograd, name) for name in ("grad", "backward")}

    def marked(original: Callable) -> Callable:
        def run(*args: Any, **kwargs: Any) -> Any:
            if marks:  # an inner one (a reentrant checkpoint's): inside the outermost's span
                return original(*args, **kwargs)
            if returned_left_out and original is originals["backward"]:
                leaves.extend(_leaves(args[0]))
            marks.append(torch.empty(1, dtype=torch.uint8))
            try:
                return original(*args, **kwargs)
            finally:
                marks.append(torch.empty(1, dtype=torch.uint8))

        return run

    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # kineto logs each trace to stderr below 6
    for name, original in originals.items():
        setattr(autograd, name, marked(original))
    try:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            yield found
    finally:
        for name, original in originals.items():
            setattr(autograd, name, original)
    if marks:
        try:
            events = allocations(prof)
        except (AttributeError, ImportError) as error:  # the profiler's internals moved
            found.bytes = NotObservable(f"torch's profiler events moved: {error}")
            return
        ptrs = [m.untyped_storage().data_ptr() for m in marks]
        grads = {_storage(leaf.grad) for leaf in leaves if leaf.grad is not None}
        found.bytes = _backward_peak(events, *ptrs, returned=grads)


def allocations(prof: Any) -> list[tuple[int, int]]:
    """(pointer, bytes) of every allocation (bytes < 0: a free) in the order they ran."""
    from torch._C._profiler import _EventType

    found, stack = [], list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        node = stack.pop()
        if node.tag == _EventType.Allocation:
            found.append((node.start_time_ns, node.extra_fields.ptr, node.extra_fields.alloc_size))
        stack.extend(node.children)
    return [(address, nbytes) for _, address, nbytes in sorted(found)]


def _backward_peak(
    allocations: list[tuple[int, int]],
    start: int,
    end: int,
    returned: frozenset | set = frozenset(),
) -> int:
    """The most bytes alive between the allocations of the markers at `start` and at `end`
    (each the last allocation at its address: both live to the end of the call; addresses
    are reused once freed; both are held until the profile ends), the markers left out, and
    the allocations still open at the end at a `returned` address (the returned gradients)."""
    opened = [i for i, (a, n) in enumerate(allocations) if n > 0 and a in (start, end)]
    first = max(i for i in opened if allocations[i][0] == start)
    last = max(i for i in opened if allocations[i][0] == end)
    open_at: dict[int, int] = {}  # address -> its allocation not freed by the end
    for index, (address, nbytes) in enumerate(allocations[: last + 1]):
        if nbytes > 0:
            open_at[address] = index
        else:
            open_at.pop(address, None)
    left_out = {first, last} | {i for a, i in open_at.items() if a in returned}
    live = peak = 0
    for index, (_, nbytes) in enumerate(allocations[: last + 1]):
        if index == first:
            peak = live  # the backward starts with what the forward kept
        if index in left_out:
            continue
        live += nbytes
        if index > first:
            peak = max(peak, live)
    return peak


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
    return [node.variable for node in graph_nodes(output) if hasattr(node, "variable")]


def graph_nodes(output: torch.Tensor) -> list[Any]:
    """Every node of the autograd graph behind `output`, once each."""
    seen, stack, found = set(), [output.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        found.append(node)
        stack.extend(child for child, _ in node.next_functions)
    return found
