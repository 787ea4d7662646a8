"""The MindSpore stack (PyNative mode): L blocks `Affine -> ReLU -> Affine`, CPU. Imports
mindspore (through `implementations.stacks.mindspore`, which sets PyNative mode, warms the
first-call glitch away and refuses to load after Paddle) and numpy.

- `none`: the blocks as they are;
- `full`: `Cell.recompute()` on every block cell.

There is no `save-mm`: `Cell.recompute` takes no policy. A block is the MindSpore stack's
`Affine` cells (`x @ W + b`, W `(in, out)`, the canonical layout) around an `nn.ReLU`.

**Instruments.**

- *saved*: the port's, `mindspore.saved_tensors_hooks` around the forward half of
  `mindspore.vjp(stack, x, weights=params)`, one per storage
  (`implementations.stacks.mindspore.SavedTensors`); x and the parameters marked.
- *peak*: not measurable (None). MindSpore's memory statistics cover device memory pools:
  on the CPU `mindspore.runtime.max_memory_allocated()` and `memory_stats()` stay 0.
- *matmuls*: not measured (None). PyNative hooks cells, not the backward kernels.
- *step*: `ops.GradOperation(get_by_list=True, sens_param=True)`: the parameters' gradient,
  pulled back from the cotangent c, and nothing for x (which is data).

**In the default sweep** (not opt-in as tfjs): at the default B = 1024, F = 256, one step of
L = 8 blocks takes 0.61 s of CPU without a checkpoint and 0.86 s with one, against torch's 0.72
and 0.81 s on the same machine (the CPU time of 5 steps, `time.process_time`): the sweep's
cost is about torch's. PyNative's per-op overhead is large (at B = 64, F = 32, L = 4 a step
takes 0.17 s of CPU), so at small sizes its times are dispatch, not arithmetic.
The whole default sweep of this stack alone took 702 s of CPU on that machine
(loaded: every line ran to max_repeats); docs/BENCHMARKS.md has the rest.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import numpy as np

from implementations.bench_case import Data, Static
from implementations.contract import SavedTensor, installed_versions
from implementations.stacks.mindspore import Affine, SavedTensors, classify, ms  # guarded

FRAMEWORK = "mindspore"
VARIANTS = ("",)  # PyNative: one way to run the stack here
MODES = ("none", "full")  # Cell.recompute has no policy: no save-mm


def versions() -> dict[str, str]:
    """The installed MindSpore, its execution mode and device."""
    found = installed_versions(("mindspore",))
    found["mode"] = "PyNative" if ms.get_context("mode") == ms.PYNATIVE_MODE else "graph"
    found["device"] = str(ms.get_context("device_target"))
    return found


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


class Block(ms.nn.Cell):
    """`Affine -> ReLU -> Affine`, (B, F) -> (B, F), from canonical `(w1, b1, w2, b2)`."""

    def __init__(self, w1, b1, w2, b2, *, recompute: bool):
        super().__init__()
        self.fc1, self.relu, self.fc2 = Affine(w1, b1), ms.nn.ReLU(), Affine(w2, b2)
        if recompute:
            self.recompute()

    def construct(self, x):  # graph mode wants the first argument named self
        return self.fc2(self.relu(self.fc1(x)))


class Stack(ms.nn.Cell):
    """The L blocks in order."""

    def __init__(self, blocks: Sequence[tuple[np.ndarray, ...]], mode: str):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; MindSpore runs {MODES}")
        self.blocks = ms.nn.CellList([Block(*b, recompute=mode == "full") for b in blocks])

    def construct(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class MindSporeCase:
    """One MindSpore configuration at one depth, on the given data.

    **Arguments:**

    - `variant`: `""` (PyNative is the only way here).
    - `mode`: see the module docstring.
    - `data`: the depth's `measure.Data`.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; MindSpore runs PyNative only")
        self.variant, self.mode = variant, mode
        self.stack = Stack(data.blocks, mode)
        self.params = ms.ParameterTuple(self.stack.trainable_params())
        self.x = ms.Tensor(np.array(data.x, np.float32))
        self.cotangent = ms.Tensor(np.array(data.cotangent, np.float32))
        self.gradient = ms.ops.GradOperation(get_by_list=True, sens_param=True)(
            self.stack, self.params
        )

    def _grads(self) -> tuple[ms.Tensor, ...]:
        """The parameters' gradient of sum(y * c): the VJP of the stack with c."""
        return self.gradient(self.x, self.cotangent)

    def residuals(self) -> tuple[SavedTensor, ...]:
        """What the forward half of `mindspore.vjp` keeps, parameters marked as such."""
        hooked = SavedTensors()
        with ms.saved_tensors_hooks(hooked.pack, hooked.unpack):
            _, vjp_fn = ms.vjp(self.stack, self.x, weights=self.params)
        saved = classify(hooked.by_storage, self.x, self.params)
        vjp_fn(self.cotangent)  # frees what the forward kept
        return saved

    def measure(self) -> Static:
        return Static(self.residuals())

    def step(self) -> None:
        grads = self._grads()
        grads[-1].asnumpy()  # PyNative may run asynchronously: wait for the last gradient


def build(variant: str, mode: str, data: Data) -> MindSporeCase:
    """The case for one configuration."""
    return MindSporeCase(variant, mode, data)


#: `bench --policies`: none and full (its depth cases); the rest it cannot express.
POLICIES = ("none", "full")
NOT_EXPRESSIBLE = dict.fromkeys(
    ("save_dots", "save_named", "offload_dots"), "Cell.recompute takes no policy"
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
