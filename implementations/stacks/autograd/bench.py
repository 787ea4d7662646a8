"""The autograd stack: L blocks `dot -> add -> relu -> dot -> add`, eager numpy. Imports autograd.

- `none`: the blocks as they are;
- `full`: the deferred checkpoint (`remat.checkpoint`) around every block, the block a
  function of its parameters and input (so gradients reach the parameters).

There is no `save-mm`: autograd's checkpoint takes no policy. Kernels are the
canonical `(in, out)`: `x @ W` needs no transpose.

**Instruments.** What the forward pass keeps is read off `make_vjp`'s backward
graph (`implementations.stacks.autograd.backward_record`, the instrument property
(e) uses). Matmuls are the calls of autograd's matmul primitives and adjoints
on plain arrays during one step (`Probe`). The peak is tracemalloc's: numpy
reports its array allocations to it, so its peak during one step, above what
it counted before, is what the step allocated at most (gradients included).
tracemalloc runs only while the peak is measured: it slows every allocation.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import numpy as np
from autograd import make_vjp

from implementations.bench_case import Data, Static
from implementations.contract import SavedTensor, installed_versions
from implementations.stacks.autograd import (
    Probe,
    Tap,
    backward_record,
    block,
    checkpointed_block,
    matmul_precision,
    no_tap,
)

FRAMEWORK = "autograd"
VARIANTS = ("",)  # eager numpy: one way to run the stack
MODES = ("none", "full")  # the checkpoint has no policy: no save-mm


def versions() -> dict[str, str]:
    """The installed autograd and numpy, and the BLAS numpy calls."""
    return {**installed_versions(("autograd", "numpy")), "blas": matmul_precision()["blas"]}


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


def stack_fn(mode: str, depth: int, tap: Callable = no_tap) -> Callable[..., np.ndarray]:
    """`stack(*params, x)`: the L blocks as the mode runs them, parameters flat, 4 per block."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; autograd runs {MODES}")
    run = block if mode == "none" else checkpointed_block

    def stack(*args: np.ndarray) -> np.ndarray:  # 4L parameters, then x (B, F)
        *params, x = args
        for layer in range(depth):
            x = run(*params[4 * layer : 4 * layer + 4], x, tap=tap)  # (B, F) -> (B, F)
        return x

    return stack


class AutogradCase:
    """One autograd configuration at one depth, on the given data.

    **Arguments:**

    - `variant`: `""` (eager is the only way here).
    - `mode`: see the module docstring.
    - `data`: the depth's `measure.Data`.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; autograd runs eager only")
        self.variant, self.mode, self.depth = variant, mode, len(data.blocks)
        self.params = [np.array(a, np.float32, order="C") for arrays in data.blocks for a in arrays]
        self.x = np.array(data.x, np.float32, order="C")
        self.cotangent = np.array(data.cotangent, np.float32, order="C")
        self.stack = stack_fn(mode, self.depth)

    def _grads(self) -> tuple[np.ndarray, ...]:
        """The parameters' gradient: the VJP of the stack with the cotangent (x held fixed)."""
        pullback, _ = make_vjp(
            lambda *params: self.stack(*params, self.x), tuple(range(len(self.params)))
        )(*self.params)
        return tuple(pullback(self.cotangent))

    def residuals(self) -> tuple[SavedTensor, ...]:
        """What `make_vjp` of the stack keeps, read off its graph; x and parameters marked."""
        names = [
            f"{kind}_{layer}" for layer in range(self.depth) for kind in ("w1", "b1", "w2", "b2")
        ]
        args = dict(zip(names, self.params, strict=True)) | {"x": self.x}
        origins = dict.fromkeys(names, "parameter") | {"x": "input"}
        tap = Tap()
        stack = stack_fn(self.mode, self.depth, tap)
        return backward_record(stack, args, origins, self.cotangent, tap).saved

    def matmuls(self) -> int:
        """Matmul primitive calls on plain arrays during one step, forward and backward."""
        with Probe() as probe:
            self._grads()
        return probe.matmuls

    def peak_bytes(self) -> int:
        """tracemalloc's peak during one step above what it counted before it."""
        gc.collect()
        started = not tracemalloc.is_tracing()  # leave a caller's tracing on
        if started:
            tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            grads = self._grads()
            peak = tracemalloc.get_traced_memory()[1] - before
            del grads
        finally:
            if started:
                tracemalloc.stop()
        return peak

    def measure(self) -> Static:
        return Static(self.residuals(), peak_bytes=self.peak_bytes(), matmuls=self.matmuls())

    def step(self) -> None:
        self._grads()  # eager: done when it returns


def build(variant: str, mode: str, data: Data) -> AutogradCase:
    """The case for one configuration."""
    return AutogradCase(variant, mode, data)


#: `bench --policies`: none and full (its depth cases); the rest it cannot express.
POLICIES = ("none", "full")
NOT_EXPRESSIBLE = {
    **dict.fromkeys(("save_dots", "save_named"), "autograd.checkpoint has no policy"),
    "offload_dots": "autograd runs on numpy in host memory: nowhere to offload",
}


# bench --schedules: the stack with its regions where a schedule places them (schedules.py,
# which imports this module: its names are looked up there when first asked for)
_SCHEDULE_NAMES = frozenset(
    ("SCHEDULE_DEPARTURES", "SCHEDULES", "SCHEDULES_NOT_EXPRESSIBLE", "schedule_case")
)


def __getattr__(name: str):
    if name in _SCHEDULE_NAMES:
        # Imported when first asked for: it loads what only bench --schedules needs.
        from implementations.stacks.autograd import schedules

        return getattr(schedules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
