"""The exercise's block in TensorFlow, and the one builder that places it over L blocks.
Imports TensorFlow (quietly, through `runtime`) and numpy.

- `block(x, w1, b1, w2, b2)`: `relu(x @ w1 + b1) @ w2 + b2` of TensorFlow ops on a batch
  `(B, D) -> (B, F)`, kernels `(in, out)` as `tf.matmul(x, kernel)` takes them (the port runs
  it on a row, `x[None]`).
- `place(placement)`: `run(x, *params)`, the blocks with a `tf.recompute_grad` region where
  the placement puts one, nested as it nests (parameters flat, four per block).
  `vjp(run, params, x, cotangent, wrt)`: the eager call every measurement watches;
  `program(run, variant)`: the same step as one `tf.function` graph (`function`) or compiled
  by XLA (`xla`), the bench's other two programs.

Declarations (`implementations.measuring.driver` reads them): `tf.recompute_grad` takes no
policy; the depth bench's `save-mm` is written out (`SAVE_MM_POLICY`: the first matmul
outside the region, which keeps `x @ W1` as JAX's `dots_saveable` does); what it cannot
express and why (`NOT_EXPRESSIBLE`); where its peak departs from the model, with the count
(`DEPARTURES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from implementations.measuring.departure import every_region, open_regions_peak
from implementations.measuring.placement import Placement
from implementations.schedules import Region, flat_stack

from .runtime import installed, tf  # first: TensorFlow's first import is the quiet one

FRAMEWORK = "tensorflow"
#: The programs the depth bench runs: the first is `vjp`'s own (eager), watched op by op.
VARIANTS = ("eager", "function", "xla")
#: The depth bench's `save-mm`, written out: TensorFlow has no checkpoint policies.
SAVE_MM_POLICY = "first_matmul_outside"
#: Policy -> how a region runs it (none is one of `implementations.policies`' names).
POLICIES = {
    SAVE_MM_POLICY: "x @ W1 outside the region, tf.recompute_grad over bias, relu and the "
    "second layer (a one-block region only)",
}
#: The plan's code (`python -m conformance plan`): a placement's regions with TensorFlow's own
#: API, `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """import tensorflow as tf

def run(items, x):  # blocks: your L layers, built
    for item in items:
        if isinstance(item, list):
            x = tf.recompute_grad(lambda x, item=item: run(item, x))(x)
        else:
            x = blocks[item](x)
    return x

y = run($placement, x)"""
#: a: what a taped block keeps beside its input, in B x F float32 tensors: relu's output.
INTERNALS_UNITS = 1.0
REGION = "tf.recompute_grad of a function of its input and its blocks' parameters"
NOT_EXPRESSIBLE = {
    "save_dots": "tf.recompute_grad has no policy",
    "save_named": "tf.recompute_grad has no policy",
    "offload_dots": "tf.recompute_grad has no offload",
    "budget": "TensorFlow has no memory-budget solver: tf.recompute_grad takes no budget",
}
#: custom_gradient.py (tensorflow 2.21): a region's gradient (`recompute_grad.grad_wrapper`,
#: called through `_eager_mode_decorator.actual_grad_fn`) reruns `f` under a `GradientTape` of
#: its own inside the outer backward. While it runs, its level holds beside the model's count
#: its rerun's output and its cotangent `dresult` (2 units), and the region's forward output,
#: which the closure of `actual_grad_fn` keeps (1 unit), where nothing else keeps it: a region
#: that is not its level's last item (its output was the next item's input, freed once that
#: item's gradient ran); a last region's output is its parent's rerun output, or the step's.
#: (Its `gen_array_ops.identity` of the inputs forwards their buffers eagerly: no copy.)
#: Measured at B = 256, F = 64: every schedule's growing peak is this count plus 2 (none's 2:
#: the output and x's gradient), at L = 16 and L = 64 (`recompute_grad_peak`).
RECOMPUTE_GRAD = (
    "tf.recompute_grad's gradient reruns its region under a tape of its own inside the outer "
    "backward: each open level holds its rerun's output and its cotangent, and the region's "
    "forward output (custom_gradient's closure) where it is not its level's last item"
)
RECOMPUTE_GRAD_SOURCE = (
    "tensorflow/python/ops/custom_gradient.py:711 result, kept by :570 actual_grad_fn; :745 "
    "recomputed_result and :749 t.gradient(..., output_gradients=dresult) (tensorflow 2.21)"
)


def recompute_grad_peak(items: tuple) -> int:
    """The peak in units over a placement's `items` with `RECOMPUTE_GRAD`'s count: the model's
    (docs/SCHEDULES.md), each open region holding 2 units more, 3 where it is not its level's
    last item (`open_regions_peak`)."""
    return open_regions_peak(items, last=2, other=3)


DEPARTURES = every_region(RECOMPUTE_GRAD, RECOMPUTE_GRAD_SOURCE, recompute_grad_peak)


def block(x: tf.Tensor, w1, b1, w2, b2) -> tf.Tensor:  # (B, D) -> (B, F)
    """`relu(x @ w1 + b1) @ w2 + b2`."""
    return tf.nn.bias_add(tf.matmul(tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1)), w2), b2)


def _after_first_matmul(d1, b1, w2, b2) -> tf.Tensor:  # (B, F) -> (B, F)
    return tf.nn.bias_add(tf.matmul(tf.nn.relu(tf.nn.bias_add(d1, b1)), w2), b2)


_rest_rerun = tf.recompute_grad(_after_first_matmul)


def _first_matmul_outside(x, w1, b1, w2, b2) -> tf.Tensor:  # (B, F) -> (B, F)
    """`SAVE_MM_POLICY`'s block: x @ W1 outside the region, which reruns the rest."""
    return _rest_rerun(tf.matmul(x, w1), b1, w2, b2)


def place(placement: Placement) -> Callable[..., tf.Tensor]:
    """`run(x, *params)`: the placement's blocks and regions (4 parameters a block, in order),
    each region `tf.recompute_grad` of the run of its items, made here once per placement."""
    wanted = placement.used_policies() - {""}
    for policy in sorted(wanted - set(POLICIES)):
        reason = NOT_EXPRESSIBLE.get(policy, "tf.recompute_grad has no policy")
        raise ValueError(f"placement: policy {policy!r} is not expressible in TensorFlow: {reason}")
    if not wanted:
        return flat_stack(placement.items, block, tf.recompute_grad)
    one_block_regions = all(isinstance(i, Region) and len(i.blocks) == 1 for i in placement.items)
    if placement.used_policies() != {SAVE_MM_POLICY} or not one_block_regions:
        raise ValueError(f"placement: {SAVE_MM_POLICY} runs as every region's policy, a block each")
    return flat_stack(placement.items, _first_matmul_outside, lambda run: run)


def vjp(
    run: Callable, params: Sequence[tf.Tensor], x: tf.Tensor, cotangent: tf.Tensor, wrt: str
) -> tuple[tf.Tensor, list[tf.Tensor]]:
    """`(y, gradients)`: `run(x, *params)` under a `GradientTape` watching the parameters
    (`wrt="params"`, x held fixed, as a batch of data would be) or x (`wrt="x"`), and its
    gradient pulled back from `cotangent`: the call measured."""
    if wrt not in ("params", "x"):
        raise ValueError(f"wrt must be 'params' or 'x', got {wrt!r}")
    sources = list(params) if wrt == "params" else [x]
    with tf.GradientTape() as tape:
        tape.watch(sources)
        y = run(x, *params)
    return y, tape.gradient(y, sources, output_gradients=cotangent)


def program(run: Callable, variant: str) -> Callable:
    """`vjp(run, params, x, cotangent, "params")` as one program of `variant`: `function`
    (one `tf.function` graph) or `xla` (`jit_compile=True`); called `(params, x, cotangent)`."""
    if variant not in VARIANTS[1:]:
        raise ValueError(f"variant must be one of {VARIANTS[1:]}, got {variant!r}")
    return tf.function(
        lambda params, x, cotangent: vjp(run, params, x, cotangent, "params"),
        jit_compile=variant == "xla",
        autograph=False,
    )


def from_numpy(array: np.ndarray) -> tf.Tensor:
    """TensorFlow's tensor for the bench's data: float32."""
    return tf.constant(np.asarray(array, np.float32))


def versions() -> dict[str, str]:
    """The installed TensorFlow, and its intra-op threads."""
    found = {}
    for dist in ("tensorflow-cpu", "tensorflow"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "not installed"
    found = installed(found)
    found["threads"] = str(tf.config.threading.get_intra_op_parallelism_threads() or "default")
    return found
