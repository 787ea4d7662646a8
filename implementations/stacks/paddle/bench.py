"""The PaddlePaddle stack: L blocks `linear -> relu -> linear`, dygraph, CPU. Imports paddle
(through `implementations.stacks.paddle`, which refuses to load after TensorFlow) and numpy.

- `none`: the blocks as they are;
- `full`: `paddle.distributed.fleet.utils.recompute(block, x, w1, b1, w2, b2)` per block,
  reentrant (Paddle's default, as the port's).

There is no `save-mm`: `recompute` takes no policy. The parameters are passed to `recompute`
as arguments: a reentrant recompute is a `PyLayer`, whose output needs grad only when an input
does, so with x (data, no grad) as the only input block 0's parameters would get none.
Kernels are `(in, out)`, Paddle's `linear` layout and the canonical one.

**Instruments.**

- *saved*: the port's, `paddle.autograd.saved_tensors_hooks` around the forward pass, one per
  storage (`implementations.stacks.paddle.SavedTensors`); x and the parameters marked.
- *peak*: Paddle's own host allocator statistic, `core.host_memory_stat_peak_value("Allocated",
  0)` during one step (its peak reset first) above `host_memory_stat_current_value` before it;
  gradients included. It is CPU Paddle's only memory figure: `paddle.device.max_memory_allocated`
  refuses CPU builds.
- *matmuls*: not measured (None). Paddle's dygraph has no dispatch hook over the backward
  kernels, and one `matmul_grad` kernel computes one or two products as its inputs need.
- *step*: `y.backward(c)` and the parameters' `.grad` (a reentrant recompute does not work
  with `paddle.grad` for the parameters), freed before the next step.

**In the default sweep** (not opt-in as tfjs): at the default B = 1024, F = 256, one step of
L = 8 blocks takes 0.28 s of CPU without a checkpoint and 0.46 s with one, against torch's 0.72
and 0.81 s on the same machine (the CPU time of 5 steps, `time.process_time`): the sweep's
cost is about torch's, minutes, not tfjs's hours.
The whole default sweep of this stack alone took 438 s of CPU on that machine
(loaded: every line ran to max_repeats); docs/BENCHMARKS.md has the rest.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

import numpy as np

from implementations.bench_case import Data, Static
from implementations.contract import SavedTensor, installed_versions

# paddle from the stack, never imported here first: the stack refuses to load it after
# TensorFlow (a segfault) and silences its import warning.
from implementations.stacks.paddle import SavedTensors, classify
from implementations.stacks.paddle.loaded import paddle
from implementations.stacks.paddle.mlp import recompute

core = paddle.base.core  # the host allocator's statistics

FRAMEWORK = "paddle"
VARIANTS = ("",)  # dygraph: one way to run the stack
MODES = ("none", "full")  # recompute has no policy: no save-mm
#: The allocator statistic `peak_bytes` reads (CPU Paddle's host allocator, device 0).
STAT = "Allocated"


def versions() -> dict[str, str]:
    """The installed paddlepaddle and the device it runs on."""
    found = installed_versions(("paddlepaddle",))
    found["device"] = paddle.device.get_device()
    return found


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


def block(x: paddle.Tensor, w1, b1, w2, b2) -> paddle.Tensor:  # (B, F) -> (B, F)
    linear = paddle.nn.functional.linear  # x @ W + b, W (in, out)
    return linear(paddle.nn.functional.relu(linear(x, w1, b1)), w2, b2)


def stack_fn(mode: str) -> Callable:
    """`stack(params, x)`: the L blocks as the mode runs them."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; Paddle runs {MODES}")

    def stack(params: Sequence[tuple[paddle.Tensor, ...]], x: paddle.Tensor) -> paddle.Tensor:
        for p in params:
            x = block(x, *p) if mode == "none" else recompute(block, x, *p)
        return x

    return stack


class PaddleCase:
    """One Paddle configuration at one depth, on the given data.

    **Arguments:**

    - `variant`: `""` (dygraph is the only way here).
    - `mode`: see the module docstring.
    - `data`: the depth's `measure.Data`. x needs no grad, as a batch of data would not.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; Paddle runs dygraph only")
        self.variant, self.mode, self.stack = variant, mode, stack_fn(mode)
        self.params = [tuple(_parameter(a) for a in arrays) for arrays in data.blocks]
        self.flat = [p for ps in self.params for p in ps]
        self.x = _tensor(data.x)  # stop_gradient: data
        self.cotangent = _tensor(data.cotangent)

    def _clear(self) -> None:
        for p in self.flat:
            p.clear_gradient(False)  # freed, not zeroed: a step then accumulates into nothing

    def _grads(self) -> list[paddle.Tensor]:
        """The parameters' gradient of sum(y * c): `y.backward(c)`, then their `.grad` (held
        until the next step, which frees them first)."""
        self._clear()
        self.stack(self.params, self.x).backward(self.cotangent)
        return [p.grad for p in self.flat]

    def residuals(self) -> tuple[SavedTensor, ...]:
        """What one forward pass keeps for the backward pass, parameters marked as such."""
        hooked = SavedTensors()
        with paddle.autograd.saved_tensors_hooks(hooked.pack, hooked.unpack):
            y = self.stack(self.params, self.x)
        saved = classify(hooked.by_storage, self.x, self.flat)
        y.backward(self.cotangent)  # frees what the forward kept
        self._clear()
        return saved

    def peak_bytes(self) -> int:
        """Paddle's host allocator: its peak during one step above what was allocated before
        it (no gradients held then)."""
        self._clear()
        before = core.host_memory_stat_current_value(STAT, 0)
        core.host_memory_stat_reset_peak_value(STAT, 0)
        self._grads()
        peak = core.host_memory_stat_peak_value(STAT, 0) - before
        self._clear()
        return peak

    def measure(self) -> Static:
        return Static(self.residuals(), peak_bytes=self.peak_bytes())

    def step(self) -> None:
        self._grads()  # eager on the CPU: done when it returns


def _tensor(array: np.ndarray) -> paddle.Tensor:
    return paddle.to_tensor(np.array(array, np.float32, order="C"), place=paddle.CPUPlace())


def _parameter(array: np.ndarray) -> paddle.Tensor:
    tensor = _tensor(array)
    tensor.stop_gradient = False
    return tensor


def build(variant: str, mode: str, data: Data) -> PaddleCase:
    """The case for one configuration."""
    return PaddleCase(variant, mode, data)


#: `bench --policies`: none and full (its depth cases); the rest it cannot express.
POLICIES = ("none", "full")
#: The plan's code (`python -m conformance plan`): a placement's regions with Paddle's own API,
#: `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """from paddle.distributed.fleet.utils import recompute

def run(items, x):  # blocks: your L layers
    for item in items:
        if isinstance(item, list):
            x = recompute(lambda x, item=item: run(item, x), x)
        else:
            x = blocks[item](x)
    return x

y = run($placement, x)"""
#: a: what a taped block keeps beside its input, in B x F float32 tensors: relu's output.
INTERNALS_UNITS = 1.0
NOT_EXPRESSIBLE = dict.fromkeys(
    ("save_dots", "save_named", "offload_dots"), "recompute takes no policy"
)


# bench --schedules: the stack with its regions where a schedule places them (schedules.py,
# which imports this module: its names are looked up there when first asked for)
_SCHEDULE_NAMES = frozenset(
    ("SCHEDULE_DEPARTURES", "SCHEDULES", "SCHEDULES_NOT_EXPRESSIBLE", "schedule_case")
)


def __getattr__(name: str):
    if name in _SCHEDULE_NAMES:
        # Looked up by name when first asked for, as the manifests resolve their targets:
        # schedules.py imports this module for its block.
        schedules = importlib.import_module(f"{__package__}.schedules")

        return getattr(schedules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
