"""The TensorFlow stack: L blocks `Dense -> relu -> Dense` of TensorFlow ops. Imports
TensorFlow (quietly, through `implementations.stacks.tensorflow`) and numpy.

- `none`: the blocks as they are;
- `full`: `tf.recompute_grad(block)` per block;
- `save-mm`: TensorFlow has no checkpoint policies, so this is written out:
  the block's first matmul runs outside the region, which keeps its output
  (what JAX's `dots_saveable` keeps of a block: x and `x @ W1`), and
  `tf.recompute_grad` reruns bias, relu and the second layer.

Each runs three ways: `eager` (a Python `GradientTape`), `function` (one
`tf.function` graph for the step) and `xla` (`tf.function(jit_compile=True)`).

**Instruments.**

- *saved*: TensorFlow's graph instrument (`implementations.stacks.tensorflow.evidence`): the
  forward tensors that the backward ops of the traced step read, with x and
  the parameters marked. One figure for all three variants: the eager tape
  keeps what the same gradient functions read, and XLA's buffers are not
  visible from TensorFlow (no `temp_bytes`).
- *matmuls*: `eager`, the `MatMul` ops executed during one step (an op
  callback); `function`, the `MatMul` ops of the traced step graph (before
  Grappler, which cannot merge a recomputation into the forward pass:
  `recompute_grad` makes it depend on the cotangent); `xla`, the `dot` ops
  of the optimized HLO (`experimental_get_compiler_ir`).
- *peak*: none. TensorFlow's CPU allocator statistics
  (`tf.config.experimental.get_memory_info("CPU:0")`) leave out allocations under 256 KiB
  (`tests/tensorflow/test_tensorflow_schedules.py`), so they are not a step's whole.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from implementations.bench_case import MODES, Data, Static
from implementations.contract import SavedTensor
from implementations.stacks.hlo import hlo_dot_count
from implementations.stacks.lazy import schedule_exports
from implementations.stacks.tensorflow import evidence, installed, tf  # TensorFlow, quietly

FRAMEWORK = "tensorflow"
VARIANTS = ("eager", "function", "xla")


def versions() -> dict[str, str]:
    """The installed TensorFlow, and its intra-op threads."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for dist in ("tensorflow-cpu", "tensorflow"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "not installed"
    found = installed(found)
    found["threads"] = str(tf.config.threading.get_intra_op_parallelism_threads() or "default")
    return found


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


def block(x: tf.Tensor, w1, b1, w2, b2) -> tf.Tensor:  # (B, F) -> (B, F)
    # Kernels (in, out), as tf.matmul(x, kernel) takes them: the canonical layout.
    return tf.nn.bias_add(tf.matmul(tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1)), w2), b2)


def _after_first_matmul(h, b1, w2, b2) -> tf.Tensor:  # (B, F) -> (B, F)
    return tf.nn.bias_add(tf.matmul(tf.nn.relu(tf.nn.bias_add(h, b1)), w2), b2)


_recomputed_block = tf.recompute_grad(block)
_recomputed_rest = tf.recompute_grad(_after_first_matmul)


def _save_mm_block(x, w1, b1, w2, b2) -> tf.Tensor:
    return _recomputed_rest(tf.matmul(x, w1), b1, w2, b2)  # x @ W1 outside the region


def wrap(mode: str) -> Callable:
    """The block as the mode runs it."""
    blocks = {"none": block, "full": _recomputed_block, "save-mm": _save_mm_block}
    if mode not in blocks:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    return blocks[mode]


def stack_fn(mode: str) -> Callable:
    """`stack(flat, x)`: the L blocks, `flat` their parameters `[w1, b1, w2, b2] * L`."""
    run = wrap(mode)

    def stack(flat: Sequence[tf.Tensor], x: tf.Tensor) -> tf.Tensor:
        for i in range(0, len(flat), 4):
            x = run(x, *flat[i : i + 4])
        return x

    return stack


def step_fn(stack: Callable) -> Callable:
    """`step(flat, x, c)`: the loss `sum(stack(flat, x) * c)` and the parameters' gradient."""

    def step(flat, x, cotangent):
        with tf.GradientTape() as tape:
            tape.watch(flat)
            y = stack(flat, x)
        grads = tape.gradient(y, flat, output_gradients=cotangent)  # the VJP with c
        return tf.reduce_sum(y * cotangent), grads

    return step


class TensorFlowCase:
    """One TensorFlow configuration at one depth, on the given data.

    **Arguments:**

    - `variant`: `eager`, `function` or `xla`.
    - `mode`: see the module docstring.
    - `data`: the depth's `measure.Data`. x needs no gradient, as a batch of data would not.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
        self.variant, self.mode = variant, mode
        self.stack = stack_fn(mode)
        self.flat = [tf.constant(np.asarray(a, np.float32)) for b in data.blocks for a in b]
        self.x = tf.constant(data.x)
        self.cotangent = tf.constant(data.cotangent)
        step = step_fn(self.stack)
        if variant == "eager":
            self.run = step
        else:
            self.run = tf.function(step, jit_compile=variant == "xla", autograph=False)

    def residuals(self) -> tuple[SavedTensor, ...]:
        """What the forward pass keeps for the backward pass, from the traced graph."""
        count = len(self.flat)
        record = evidence.backward_record(
            lambda x, *flat: self.stack(flat, x),
            [self.x, *self.flat],
            origins=("input", *(("parameter",) * count)),
            cotangent=self.cotangent,
        )
        return record.saved

    def matmuls(self) -> int | None:
        if self.variant == "eager":
            with evidence.CreatedOps().watching() as ops:
                self.step()
            return ops.counts["MatMul"]
        if self.variant == "function":
            graph = self.run.get_concrete_function(self.flat, self.x, self.cotangent).graph
            return Counter(op.type for op in graph.get_operations())["MatMul"]
        hlo = self.run.experimental_get_compiler_ir(self.flat, self.x, self.cotangent)
        return hlo_dot_count(hlo(stage="optimized_hlo"))

    def measure(self) -> Static:
        return Static(self.residuals(), matmuls=self.matmuls())

    def step(self) -> None:
        loss, _ = self.run(self.flat, self.x, self.cotangent)
        loss.numpy()  # waits for the step (and, eagerly, it is done already)


def build(variant: str, mode: str, data: Data) -> TensorFlowCase:
    """The case for one configuration (nothing is traced yet)."""
    return TensorFlowCase(variant, mode, data)


#: `bench --policies`: none and full (its depth cases); the rest it cannot express.
POLICIES = ("none", "full")
NOT_EXPRESSIBLE = dict.fromkeys(("save_dots", "save_named"), "tf.recompute_grad has no policy")


# bench --schedules: the stack with its regions where a schedule places them (schedules.py,
# which imports this module: its names are looked up there when first asked for)
__getattr__, __dir__ = schedule_exports(__name__)
