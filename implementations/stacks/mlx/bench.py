"""The MLX stack: L blocks `Linear -> relu -> Linear`, lazy and uncompiled, CPU. Imports mlx.

- `none`: the blocks as they are;
- `full`: `mx.checkpoint(block)` around every block, the block a function of
  its parameters and input (so gradients reach the parameters).

There is no `save-mm`: `mx.checkpoint` takes no policy. A block is written
as `nn.Linear` computes: `addmm(b, x, W.T)`, W in MLX's `(out, in)` layout.

**Instruments.** What the forward pass keeps for the backward pass is read
off the lazy graph of `mx.vjp` (`implementations.stacks.mlx.backward_record`,
the instrument property (e) uses; each block notes its arrays, whose shapes
the export lacks). The peak is MLX's own allocator counter: `mx.get_peak_memory()`
during one step, above the active memory before it. Matmuls are the `AddMM`
and `Matmul` primitives of the step's graph that its evaluation runs. The
machine's mlx-cpu wheel computes matmuls with the reference BLAS it bundles,
so MLX's absolute times are not comparable with the others'; its ratios are.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable

import mlx.core as mx

from implementations.bench_case import Data, Static
from implementations.contract import SavedTensor, installed_versions
from implementations.stacks.mlx import Graph, Tap, backward_record, no_tap

FRAMEWORK = "mlx"
VARIANTS = ("",)  # lazy, uncompiled: one way to run the stack
MODES = ("none", "full")  # mx.checkpoint has no policy: no save-mm
MATMULS = frozenset({"AddMM", "Matmul"})


def versions() -> dict[str, str]:
    """The installed mlx version and the device it runs on."""
    return {**installed_versions(("mlx", "mlx-cpu")), "device": str(mx.default_device())}


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


def block(w1, b1, w2, b2, x, tap: Callable = no_tap) -> mx.array:  # (B, F) -> (B, F)
    # Weights are MLX's (out, in), as nn.Linear's: addmm(b, x, W.T).
    h = tap("h", mx.addmm(b1, x, w1.T))
    a = tap("relu", mx.maximum(h, 0))
    return tap("y", mx.addmm(b2, a, w2.T))


def stack_fn(mode: str, depth: int, tap: Callable = no_tap) -> Callable[..., mx.array]:
    """`stack(*params, x)`: the L blocks as the mode runs them, parameters flat, 4 per block."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; MLX runs {MODES}")

    def one(*args: mx.array) -> mx.array:
        return block(*args, tap=tap)

    run = one if mode == "none" else mx.checkpoint(one)

    def stack(*args: mx.array) -> mx.array:  # 4L parameters, then x (B, F)
        *params, x = args
        for layer in range(depth):
            # Named outside the checkpoint too: its output is another array than the block's.
            x = tap("out", run(*params[4 * layer : 4 * layer + 4], x))
        return x

    return stack


class MlxCase:
    """One MLX configuration at one depth, on the given data.

    **Arguments:**

    - `variant`: `""` (lazy and uncompiled is the only way here).
    - `mode`: see the module docstring.
    - `data`: the depth's `measure.Data`.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; MLX runs lazy and uncompiled only")
        self.variant, self.mode, self.depth = variant, mode, len(data.blocks)
        self.params = [
            mx.array(array.T.copy() if array.ndim == 2 else array)  # (in, out) -> (out, in)
            for arrays in data.blocks
            for array in arrays
        ]
        self.x, self.cotangent = mx.array(data.x), mx.array(data.cotangent)
        mx.eval(self.params, self.x, self.cotangent)
        self.stack = stack_fn(mode, self.depth)

    def _step(self) -> tuple[mx.array, list[mx.array]]:
        """The loss `sum(y * c)` and the parameters' gradient (the VJP with c), unevaluated."""
        outputs, grads = mx.vjp(
            lambda *params: [self.stack(*params, self.x)], self.params, [self.cotangent]
        )
        return mx.sum(outputs[0] * self.cotangent), grads

    def residuals(self) -> tuple[SavedTensor, ...]:
        """What `mx.vjp` of the stack keeps, read off its graph; x and parameters marked."""
        names = [
            f"{kind}{layer}" for layer in range(self.depth) for kind in ("w1", "b1", "w2", "b2")
        ]
        args = dict(zip(names, self.params, strict=True)) | {"x": self.x}
        origins = dict.fromkeys(names, "parameter") | {"x": "input"}
        tap = Tap()
        stack = stack_fn(self.mode, self.depth, tap)
        return backward_record(stack, args, origins, self.cotangent, tap).saved

    def matmuls(self) -> int:
        """`AddMM` and `Matmul` primitives that evaluating one step runs (its graph's)."""
        loss, grads = self._step()
        graph = Graph.export(
            [loss, *grads], {"loss": loss} | {f"g{i}": g for i, g in enumerate(grads)}
        )
        needed = graph.ancestors(["loss", *(f"g{i}" for i in range(len(grads)))])
        primitives = {graph.producer[a] for a in needed if a in graph.producer}
        return sum(graph.label[p] in MATMULS for p in primitives)

    def peak_bytes(self) -> int:
        """MLX's peak allocation during one step, above what was active before it."""
        gc.collect()
        mx.synchronize()
        before = mx.get_active_memory()
        mx.reset_peak_memory()
        loss, grads = self._step()
        mx.eval(loss, grads)
        peak = mx.get_peak_memory() - before
        del loss, grads
        return peak

    def held_bytes(self) -> int:
        """MLX's allocator, between the passes: bytes the forward pass allocated that are
        still active once it is evaluated and its output dropped, the backward pending.

        A cross-check of `residuals`, not a column: x was allocated before (it is
        not in here), and `mx.checkpoint` holds the last block's output for ordering.
        """
        gc.collect()
        mx.synchronize()
        before = mx.get_active_memory()
        outputs, grads = mx.vjp(
            lambda *params: [self.stack(*params, self.x)], self.params, [self.cotangent]
        )
        mx.eval(outputs)
        del outputs
        held = mx.get_active_memory() - before
        mx.eval(grads)
        return held

    def measure(self) -> Static:
        return Static(self.residuals(), peak_bytes=self.peak_bytes(), matmuls=self.matmuls())

    def step(self) -> None:
        mx.eval(*self._step())  # lazy: done when the loss and gradients are evaluated


def build(variant: str, mode: str, data: Data) -> MlxCase:
    """The case for one configuration."""
    return MlxCase(variant, mode, data)


#: `bench --policies`: none and full (its depth cases); the rest it cannot express.
POLICIES = ("none", "full")
NOT_EXPRESSIBLE = dict.fromkeys(("save_dots", "save_named"), "mx.checkpoint has no policy")


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
