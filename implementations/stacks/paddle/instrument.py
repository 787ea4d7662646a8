"""Paddle's instrument: contexts around the very call that is checked. Imports paddle and numpy;
builds no model of its own.

`watch(x, parameters)` and `peak()` watch the block's call (`block.vjp`) and give a `Record`;
`observe(call, x, parameters)` watches a port's own call (its `nn_checkpoint_forward` and a
backward pass of its output) and gives the `BackwardRecord` (e), (j), (k) read.

- **Phases.** The call is in its backward pass while Paddle's engine runs one
  (`core.eager.run_backward`, behind `Tensor.backward` and `paddle.autograd.backward`, or
  `core.eager.run_partial_grad`, behind `paddle.grad`), wrapped for the call's length.
- **Saved:** `saved_hooks.saved_tensors_hooks(pack, unpack)` (Paddle's pair, a `PyLayer`'s
  `save_for_backward` handed to `pack` outside its buggy setter) around the whole call: every
  tensor autograd keeps in the forward phase, once per storage (`data_ptr`; one packed in the
  backward phase is a reentrant recompute's own). `watch` knows the call's tensors: x's
  storage is the input, a parameter's a parameter, anything else an activation; `observe`
  knows no model object and tells x and the parameters by their values. Memory space:
  `device`, the CPU's memory, where CPU Paddle computes.
- **Roles:** `watch`: a block's output (its `block.block` returning, seen by `sys.setprofile`)
  is y, relu's output (kept by `ReluGradNode`) a, x's storage x. `observe`: each leaf
  `paddle.nn.Layer`'s output by the place the layer first ran in (h, a, y). Paddle's `linear`
  adds the bias in the one call, so d1 never stands alone.
- **Matmuls:** Paddle's operator statistics (`FLAGS_low_precision_op_list`, read with
  `core.get_low_precision_op_list`) count every forward kernel it runs (`matmul_v2`), and no
  grad kernel: the forward pass's matmuls are those counted before the engine's first entry,
  those inside the backward pass a rerun's. The gradient's own `matmul_v2_grad` kernels are
  not in the statistics: `backward_matmuls` is not observable.
- **Evaluations** (`watch`): each call of `block.block`, its index told by its `w1`'s storage
  (a rerun's parameters are detached views of the same storage), with the `matmul_v2` kernels
  counted between its call and its return.
- **Regions, reruns** (`watch`): calls of `fleet.recompute.recompute` in the forward pass
  (nested ones included: they run under the outer's no_grad), and of
  `RecomputeFunction.backward`. **Recomputed:** `watch`, the `matmul_v2` kernels of the
  backward pass; `observe`, every leaf layer run in the backward phase, by class (a port that
  recomputes with bare functions, no layers, shows none).
- **Peak** (`peak`): Paddle's host allocator statistic, `core.host_memory_stat_peak_value(
  "Allocated", 0)`, reset as the outermost engine entry starts and read as it returns, above
  `host_memory_stat_current_value` when `peak()` began; CPU Paddle's only memory figure
  (`paddle.device.max_memory_allocated` refuses CPU builds).

Two traits of Paddle shape it: `recompute(use_reentrant=False)` installs saved-tensor hooks of
its own and Paddle allows one pair at a time ("only one pair of hooks is allowed at a time"),
so the instrument needs the reentrant default.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ...contract import BackwardRecord
from ...measuring.record import MATMULS as BLOCK_MATMULS
from ...measuring.record import Evaluation, NotObservable, Record
from .. import hooks_evidence
from . import block as block_module
from .arrays import to_host_array
from .loaded import paddle
from .saved_hooks import saved_tensors_hooks

INSTRUMENT = (
    "the port's own call under paddle.autograd.saved_tensors_hooks (storages packed before "
    "its backward pass, deduplicated; x and parameters told by values); leaf layers run "
    "during core.eager.run_backward, by class; roles by leaf layers in the forward; matmul_v2 "
    "kernels by Paddle's operator statistics, before and during the backward pass (a rerun's; "
    "grad kernels are not in them)"
)
WATCH = (
    "the block's call under paddle.autograd.saved_tensors_hooks (storages packed before its "
    "backward pass, deduplicated, x and parameters by storage) and sys.setprofile (block "
    "calls, recompute regions and reruns); matmul_v2 kernels by Paddle's operator statistics"
)
PEAK = (
    "Paddle host allocator peak (host_memory_stat_peak_value('Allocated', 0)) over the "
    "outermost engine entry (reset as it starts, read as it returns), above the bytes "
    "allocated before the call"
)
METHODS = {
    "saved": "storages packed by saved_tensors_hooks before the engine's first entry",
    "evaluations": "calls of block.block, by its w1's storage, with the matmul_v2 kernels "
    "counted between call and return",
    "forward_matmuls": "matmul_v2 kernels in Paddle's operator statistics before the engine's "
    "first entry",
    "recomputed": "matmul_v2 kernels in Paddle's operator statistics inside the engine",
    "regions": "calls of fleet.recompute.recompute before the engine's first entry",
    "reruns": "calls of RecomputeFunction.backward",
}
NO_GRAD_KERNELS = NotObservable(
    "Paddle's operator statistics count forward kernels only (no matmul_v2_grad), and its "
    "dygraph has no dispatch hook over the backward kernels"
)

#: Where every tensor is kept: CPU Paddle computes in the CPU's memory, its device.
SPACE = "device"
#: The forward kernel of a matmul (paddle.nn.functional.linear's, on the CPU).
MATMUL = "matmul_v2"
#: Paddle's engine entry points: the call is in its backward pass while one of these runs.
ENGINE = ("run_backward", "run_partial_grad")
#: The host allocator statistic the peak reads (CPU Paddle's host allocator, device 0).
STAT = "Allocated"
_recompute = importlib.import_module("paddle.distributed.fleet.recompute.recompute")
_BLOCK_CODE = block_module.block.__code__
_REGION_CODE = _recompute.recompute.__code__
_RERUN_CODE = _recompute.RecomputeFunction.backward.__code__


def describe(tensor: paddle.Tensor) -> tuple[str, str, str]:
    """Its dtype without the `paddle.` prefix; x and an activation noted by the tensor's name."""
    return str(tensor.dtype).removeprefix("paddle."), f"x ({tensor.name})", f"tensor {tensor.name}"


# -- the engine and the operator statistics -------------------------------------------------


@contextlib.contextmanager
def engine_entered(
    on_entry: Callable[[int], None], on_exit: Callable[[int], None] = lambda depth: None
) -> Iterator[None]:
    """For the `with` block: each engine entry point calls `on_entry(depth)` (0: outermost) as
    it starts and `on_exit(depth)` as it returns. Put back whatever happens."""
    engine = paddle.base.core.eager
    originals = {name: getattr(engine, name) for name in ENGINE}
    depth = [0]

    def entered(run: Callable) -> Callable:
        def run_noted(*args: Any, **kwargs: Any) -> Any:
            on_entry(depth[0])
            depth[0] += 1
            try:
                return run(*args, **kwargs)
            finally:
                depth[0] -= 1
                on_exit(depth[0])

        return run_noted

    try:
        for name, run in originals.items():
            setattr(engine, name, entered(run))
        yield
    finally:
        for name, run in originals.items():
            setattr(engine, name, run)


@contextlib.contextmanager
def operator_statistics() -> Iterator[Callable[[], int]]:
    """Paddle's operator statistics on for the `with` block: yields `matmuls()`, the
    `matmul_v2` kernels run so far in it. The flag is put back."""
    flag = "FLAGS_low_precision_op_list"
    before = paddle.get_flags([flag])[flag]
    paddle.set_flags({flag: 1})
    paddle.base.core.clear_low_precision_op_list()
    try:
        yield _matmuls
    finally:
        paddle.base.core.clear_low_precision_op_list()
        paddle.set_flags({flag: before})


def _matmuls() -> int:
    # Each entry reads "fp16,bf16,fp32,other" calls of the op.
    counts = paddle.base.core.get_low_precision_op_list().get(MATMUL, "0,0,0,0")
    return sum(int(n) for n in counts.split(","))


# -- watch: the block's call ------------------------------------------------------------------


class Watch(hooks_evidence.ObservedCall):
    """One watched call of the block (see the module's docstring). `x` and `parameters`
    (canonical order, four per block) are the call's tensors."""

    def __init__(self, x: paddle.Tensor, parameters: Iterable[paddle.Tensor]):
        super().__init__(paddle.Tensor)
        self.x, self.parameters = x, list(parameters)
        self.kernels = {p.data_ptr(): i // 4 for i, p in enumerate(self.parameters) if i % 4 == 0}
        self.at_backward: int | None = None  # matmuls counted at the engine's first entry
        self.total = 0
        self.regions = self.reruns = 0
        self.open: list[tuple[int, int]] = []  # block evaluations under way: (index, matmuls)
        self.evaluations: list[Evaluation] = []
        self.roles: dict[int, str] = {}  # storage -> role, of the forward's block outputs
        self.count: Callable[[], int] = _matmuls

    @property
    def phase(self) -> str:
        return "backward" if self.engine.running() else "forward"

    def entered(self, depth: int) -> None:
        self.engine.depth += 1
        if depth == 0 and self.at_backward is None:
            self.at_backward = self.count()

    def left(self, depth: int) -> None:
        self.engine.depth -= 1

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code is _BLOCK_CODE:
            if event == "call":
                w1 = frame.f_locals.get("w1")
                index = self.kernels.get(w1.data_ptr(), -1) if w1 is not None else -1
                self.open.append((index, self.count()))
            elif event == "return" and self.open:
                index, start = self.open.pop()
                ran = BLOCK_MATMULS[: self.count() - start]
                self.evaluations.append(Evaluation(index, self.phase, ran))
                if self.phase == "forward" and isinstance(arg, paddle.Tensor):
                    self.held.append(arg)  # its storage stays its own until the record
                    self.roles[arg.data_ptr()] = "y"
        elif event == "call" and code is _REGION_CODE and self.phase == "forward":
            self.regions += 1
        elif event == "call" and code is _RERUN_CODE:
            self.reruns += 1

    def role_of(self, ptr: int, tensor: paddle.Tensor) -> str:
        if ptr in self.roles:
            return self.roles[ptr]
        node = tensor.grad_fn
        return "a" if node is not None and node.name() == "ReluGradNode" else ""

    def classify(self) -> tuple:
        """The kept storages as `SavedTensor`s: x's the input, a parameter's a parameter."""
        saved = hooks_evidence.classify(
            self.saved,
            self.x,
            self.parameters,
            lambda ptr: self.role_of(ptr, self.saved[ptr]),
            describe=describe,
        )
        return tuple(dataclasses.replace(t, memory_space=SPACE) for t in saved)

    def record(self) -> Record:
        """What the call showed (`Record`); saved and reruns only once a backward ran."""
        ran = self.at_backward is not None
        none = NotObservable("the call ran no Paddle backward pass")
        forward = self.at_backward if ran else self.total
        return Record(
            WATCH,
            METHODS,
            saved=self.classify() if ran else none,
            evaluations=tuple(self.evaluations),
            forward_matmuls=forward,
            backward_matmuls=NO_GRAD_KERNELS,
            recomputed={MATMUL: self.total - forward} if ran else none,
            regions=self.regions,
            reruns=self.reruns if ran else none,
        )


@contextlib.contextmanager
def watch(x: paddle.Tensor, parameters: Iterable[paddle.Tensor]) -> Iterator[Watch]:
    """The hooks and the profiler around the call in the `with` block; `.record()` after it.
    The profiler that was set before is put back."""
    seen = Watch(x, parameters)
    previous = sys.getprofile()
    hooks = saved_tensors_hooks(seen.pack, seen.unpack)
    with operator_statistics() as count, engine_entered(seen.entered, seen.left), hooks:
        seen.count = count
        sys.setprofile(seen.profile)
        try:
            yield seen
        finally:
            sys.setprofile(previous)
            seen.total = count()


# -- peak ---------------------------------------------------------------------------------------


class Peak:
    """The host allocator's peak over the backward pass of the call in `peak()`'s block,
    above `before` (the bytes allocated when `peak()` began)."""

    def __init__(self, before: int):
        self.before, self.bytes = before, None

    def reset(self, depth: int) -> None:
        if depth == 0:  # the outermost backward pass starts
            paddle.base.core.host_memory_stat_reset_peak_value(STAT, 0)

    def read(self, depth: int) -> None:
        if depth == 0:  # it ends: what the call does after it (its copies out) is not read
            found = paddle.base.core.host_memory_stat_peak_value(STAT, 0) - self.before
            self.bytes = max(found, self.bytes or 0)

    def record(self) -> Record:
        figure = NotObservable("the call ran no backward pass") if self.bytes is None else None
        return Record(PEAK, {"peak_bytes": PEAK}, peak_bytes=figure or self.bytes)


@contextlib.contextmanager
def peak() -> Iterator[Peak]:
    """The host allocator's statistic around the call in the `with` block, its peak reset as
    the outermost engine entry starts and read as it returns."""
    found = Peak(paddle.base.core.host_memory_stat_current_value(STAT, 0))
    with engine_entered(found.reset, found.read):
        yield found


# -- observe: a port's own call -----------------------------------------------------------------


def observe(
    call: Callable[[], Any], x: Any, parameters: Callable[[], Iterable[np.ndarray]]
) -> BackwardRecord:
    """Paddle's instrument on `call()`, a forward and a backward pass of the port's own code.

    **Arguments:** `call`; `x`, the values of the call's input (a tensor or an array);
    `parameters()`, called after the call, the parameters' values as numpy arrays.
    """
    x_values = to_host_array(x) if isinstance(x, paddle.Tensor) else np.asarray(x, np.float32)
    at_backward: list[int] = []

    def first_entry(depth: int) -> None:
        if depth == 0 and not at_backward:
            at_backward.append(_matmuls())

    with operator_statistics() as count:
        with engine_entered(first_entry):
            record = hooks_evidence.observe(
                call,
                x_values,
                parameters,
                tensor_type=paddle.Tensor,
                saved_tensors_hooks=saved_tensors_hooks,
                entries=[(paddle.base.core.eager, name) for name in ENGINE],
                module_class=paddle.nn.Layer,
                is_leaf_module=lambda layer: not layer.sublayers(),
                to_numpy=to_host_array,
                is_leaf=lambda tensor: tensor.is_leaf,
                made_by=_made_by,
                describe=describe,
                instrument=INSTRUMENT,
            )
        total = count()
    forward = at_backward[0] if at_backward else total
    # backward_matmuls stays None: the gradient's own matmuls are not in the count.
    return dataclasses.replace(record, forward_matmuls=forward, rerun_matmuls=total - forward)


def _made_by(tensor: paddle.Tensor) -> str:
    node = tensor.grad_fn
    return node.name() if node is not None else "no differentiable op"


def backward_of(output: paddle.Tensor) -> None:
    """The backward pass of `output` with a cotangent of ones."""
    output.backward(paddle.ones_like(output))
