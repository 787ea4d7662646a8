"""`bench --schedules` on TensorFlow (eager): the depth-L stack with its regions where a
schedule places them. Imports TensorFlow (quietly) and numpy.

- `none`: the blocks as they are;
- `every`, `segments(s)`, `nested(...)`, `binomial(c)`: the placement tree, each region
  `tf.recompute_grad` of a function of its input and its blocks' parameters, nested as the
  tree nests (`segments`' plain tail, as torch's `checkpoint_sequential` leaves it).

**Instruments.** Forward matmuls: an op callback counts the eager `MatMul` ops of forward
direction (neither operand transposed: the backward's products transpose one), during the
forward pass and during `tape.gradient`. Regions: the recompute_grad regions entered in the
forward pass. Peak bytes: TensorFlow's CPU allocator statistics
(`tf.config.experimental.get_memory_info("CPU:0")`), which leave out allocations under 256
KiB (oneDNN's small-size allocator): the peak of a backward pass to x, its statistics reset as
it starts, run at k*B and 2k*B rows, k the least power of two that puts a (k*B, F) float32
tensor at 256 KiB or more; their difference over k is what grows with the batch at B rows,
the activations (the parameters' and their gradients' bytes do not grow, and cancel), as
JAX's temp(2B) - temp(B).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.schedules import Departure, Schedule, flat_stack
from implementations.stacks.tensorflow import tf  # TensorFlow, quietly
from implementations.stacks.tensorflow.bench import block

FRAMEWORK = "tensorflow"
SCHEDULES = {
    "none": "the plain blocks",
    "every": "tf.recompute_grad(block) per block",
    "segments": "tf.recompute_grad over each of the first s-1 segments, the tail plain",
    "nested": "tf.recompute_grad(region) nested as the placement nests",
    "binomial": "Revolve's placement tree, each region a nested tf.recompute_grad",
}
SCHEDULES_NOT_EXPRESSIBLE = {
    "budget": "TensorFlow has no memory-budget solver: tf.recompute_grad takes no budget",
}
SCHEDULE_DEPARTURES = {
    name: Departure(
        "tf.recompute_grad's gradient reruns its region under a tape of its own, inside the "
        "outer backward, on tf.identity copies of its inputs: each open level holds its "
        "input's copy, its rerun's output and the cotangent",
        held_per_level=3,
    )
    for name in ("nested", "binomial")
}
PEAK_METHOD = (
    "TF CPU allocator peak over a backward pass to x that grows with B: "
    "(peak(2kB) - peak(kB)) / k, as allocations under 256 KiB go uncounted"
)
#: oneDNN's CPU allocator serves smaller allocations apart, uncounted (measured in a test).
COUNTED_FROM = 256 * 1024
_DEVICE = "CPU:0"


def _forward_matmul(attrs) -> bool:
    """Whether a MatMul's attributes say forward direction (no operand transposed)."""
    found = dict(zip(attrs[::2], attrs[1::2], strict=True))
    return not found.get("transpose_a") and not found.get("transpose_b")


class _Counter:
    """An op callback: the forward-direction MatMuls executed eagerly."""

    def __init__(self):
        self.count = 0

    def __call__(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        name = op_type.decode() if isinstance(op_type, bytes) else op_type
        if name == "MatMul" and _forward_matmul(attrs):
            self.count += 1
        return None


def _region(inner: Callable, regions: list[int]) -> Callable:
    recomputed = tf.recompute_grad(inner)

    def entered(x, *params):
        regions[0] += 1
        return recomputed(x, *params)

    return entered


class TensorFlowScheduleCase:
    """One schedule at one depth on eager TensorFlow (`schedule_case`)."""

    framework = FRAMEWORK

    def __init__(self, schedule: Schedule, data: Data):
        self.schedule = schedule.label
        self.regions = [0]
        regions = self.regions
        self.stack = flat_stack(
            schedule.placement(len(data.blocks)),
            block,
            lambda inner: _region(inner, regions),
        )
        self.flat = [tf.constant(np.asarray(a, np.float32)) for b in data.blocks for a in b]
        self.x = tf.constant(np.asarray(data.x, np.float32))
        self.cotangent = tf.constant(np.asarray(data.cotangent, np.float32))

    def _forward(self) -> tuple[tf.GradientTape, tf.Tensor]:
        with tf.GradientTape() as tape:
            tape.watch(self.flat)
            y = self.stack(self.x, *self.flat)
        return tape, y

    def measure(self) -> ScheduleStatic:
        from tensorflow.python.framework import op_callbacks

        counter = _Counter()
        self.regions[0] = 0
        op_callbacks.add_op_callback(counter)
        try:
            tape, y = self._forward()
            forward, entered = counter.count, self.regions[0]
            tape.gradient(y, self.flat, output_gradients=self.cotangent)
        finally:
            op_callbacks.remove_op_callback(counter)
        counted = (forward, counter.count - forward)
        return ScheduleStatic(counted, self.peak_bytes(), PEAK_METHOD, entered)

    def peak_bytes(self) -> int:
        """What grows with the batch in a backward pass's peak, at this case's B rows."""
        rows, width = self.x.shape
        scale = 1
        while scale * rows * width * 4 < COUNTED_FROM:
            scale *= 2
        low, high = (self._backward_peak(scale * k) for k in (1, 2))
        return max(0, round((high - low) / scale))

    def _backward_peak(self, copies: int) -> int:
        """The allocator's peak in a backward pass to x over `copies` times the rows, above
        what was in use before the forward (its statistics reset as the backward starts,
        when all the forward kept is alive)."""
        memory = tf.config.experimental
        x = tf.tile(self.x, (copies, 1))
        cotangent = tf.tile(self.cotangent, (copies, 1))
        before = memory.get_memory_info(_DEVICE)["current"]
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = self.stack(x, *self.flat)
        memory.reset_memory_stats(_DEVICE)
        gradient = tape.gradient(y, x, output_gradients=cotangent)
        peak = memory.get_memory_info(_DEVICE)["peak"]
        del gradient, y, tape
        return peak - before

    def values(self) -> Values:
        tape, y = self._forward()
        grads = tape.gradient(y, self.flat, output_gradients=self.cotangent)
        arrays = [g.numpy() for g in grads]
        return Values(y.numpy(), [tuple(arrays[i : i + 4]) for i in range(0, len(arrays), 4)])

    def step(self) -> None:
        tape, y = self._forward()
        grads = tape.gradient(y, self.flat, output_gradients=self.cotangent)
        grads[0].numpy()  # eager: done when it returns


def schedule_case(schedule: str | Schedule, data: Data) -> TensorFlowScheduleCase:
    """The stack of `len(data.blocks)` blocks under `schedule`."""
    parsed = Schedule.parse(schedule)
    if parsed.name in SCHEDULES_NOT_EXPRESSIBLE:
        raise ValueError(
            f"schedule {parsed.label!r} is not expressible in TensorFlow: "
            f"{SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
        )
    parsed.placement(len(data.blocks))  # a bad depth is refused here, naming the argument
    return TensorFlowScheduleCase(parsed, data)
