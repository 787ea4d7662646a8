"""Flax's init of the exercise in TensorFlow ops, compiled by XLA. Imports TensorFlow and numpy.

The numpy init (`_canonical_init.numpy_init`) recomputes jax's threefry
and truncated normal in numpy. Here the same steps run as one XLA program
per shape (`tf.function(jit_compile=True)`), which is what jax itself runs:
at D = F = 1024 it takes a fifth of the numpy init's time. The float steps
(`uniform`'s multiply-add, `erf_inv`, the clamp) are XLA's own ops, so XLA
rounds them as it does for jax; tests/tensorflow/test_tensorflow.py checks all 2**23
outcomes of the truncated normal against the numpy init, and whole kernels
against it bit for bit. XLA's `erf_inv` rounded otherwise before TensorFlow
2.21 (up to 3 ulp on some outcomes: 2.18 to 2.20, as jaxlib <= 0.8.1 does):
`xla_rounds_as_jax` checks 16 such outcomes once, and where they differ the
kernels come from the numpy init instead (docs/VERSIONS.md).

The keys are the numpy init's (`dense_kernel_key`: Flax's folds, microseconds
on Python ints); only the bulk, a hash and a truncated normal per element,
runs in XLA. The program runs on the CPU, whatever device TensorFlow would
pick: the bits are then XLA:CPU's, as every other port's are, and the
kernels are copied to an accelerator once.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...contract import Params, check_dim, check_features, check_seed, check_sizes
from ..numpy import init as numpy_init
from ..numpy.init import (
    dense_kernel_key,
    lecun_stddev,
    truncation_bounds,
)
from .runtime import tf

__all__ = [
    "MAX_ELEMENTS",
    "canonical_params",
    "kernels",
    "threefry2x32",
    "truncated_normal_of_bits",
]

# The counters are a tf.range of int32; a larger kernel (over 8 GiB) takes the numpy init.
MAX_ELEMENTS = 2**31 - 1

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KS_PARITY = 0x1BD11BDA


def _rotate_left(value: tf.Tensor, bits: int) -> tf.Tensor:
    left = tf.bitwise.left_shift(value, tf.constant(bits, tf.uint32))
    right = tf.bitwise.right_shift(value, tf.constant(32 - bits, tf.uint32))  # logical: unsigned
    return tf.bitwise.bitwise_or(left, right)


def threefry2x32(key0: tf.Tensor, key1: tf.Tensor, x0: tf.Tensor, x1: tf.Tensor):
    """Threefry-2x32, 20 rounds (jax's `threefry2x32_p`) on uint32 tensors; wraps as XLA's do."""
    parity = tf.bitwise.bitwise_xor(
        tf.bitwise.bitwise_xor(key0, key1), tf.constant(_KS_PARITY, tf.uint32)
    )
    ks = (key0, key1, parity)
    y0, y1 = x0 + ks[0], x1 + ks[1]
    for block in range(5):
        for bits in _ROTATIONS[block % 2]:
            y0 = y0 + y1
            y1 = tf.bitwise.bitwise_xor(_rotate_left(y1, bits), y0)
        y0 = y0 + ks[(block + 1) % 3]
        y1 = y1 + (ks[(block + 2) % 3] + tf.constant(block + 1, tf.uint32))
    return y0, y1


def truncated_normal_of_bits(bits: tf.Tensor) -> tf.Tensor:
    """`truncated_normal(-2, 2)` of uint32 bits, as jax maps them: uniform, `erf_inv`, clamp."""
    # uniform: the top 23 bits as a mantissa in [1, 2), minus 1, into [a, b).
    a, b, lowest, highest = truncation_bounds(-2.0, 2.0)
    mantissa = tf.bitwise.right_shift(bits, tf.constant(9, tf.uint32))
    one_to_two = tf.bitwise.bitwise_or(mantissa, tf.constant(0x3F800000, tf.uint32))
    unit = tf.bitcast(one_to_two, tf.float32) - 1.0
    u = tf.maximum(a, unit * (b - a) + a)
    return tf.clip_by_value(np.float32(np.sqrt(2)) * tf.math.erfinv(u), lowest, highest)


def _lecun_normal(key: tf.Tensor, shape: tuple[int, int]) -> tf.Tensor:
    # jax.nn.initializers.lecun_normal()(key, shape), step by step as jax runs it.
    low = tf.bitcast(tf.range(shape[0] * shape[1], dtype=tf.int32), tf.uint32)  # flat index
    y0, y1 = threefry2x32(key[0], key[1], tf.zeros_like(low), low)  # high word 0
    normal = truncated_normal_of_bits(tf.bitwise.bitwise_xor(y0, y1))
    return tf.reshape(normal * lecun_stddev(float(shape[0])), shape)


#: Mantissas whose truncated normal an older XLA's `erf_inv` rounds otherwise (up to 3 ulp,
#: 4 once scaled): TensorFlow 2.18 and 2.19 on the first eight (2548 outcomes of 2**23), 2.20
#: (as jaxlib <= 0.8.1) on the last eight (35182). TensorFlow 2.21 matches on all of them.
_DRIFTING_MANTISSAS = (
    1366908, 1491981, 1623850, 1859924, 2958439, 6521661, 6763951, 6895670,
    5, 248810, 616989, 793944, 1366039, 7594519, 7771478, 8139658,
)  # fmt: skip


@functools.cache
def xla_rounds_as_jax() -> bool:
    """Whether this TensorFlow's XLA gives the numpy init's bits (jax >= 0.8.2's) on the
    mantissas where older XLA releases drift; if not, `kernels` takes the numpy init."""
    mantissas = np.array(_DRIFTING_MANTISSAS, np.uint32)
    with tf.init_scope(), tf.device("/CPU:0"):
        compiled = tf.function(truncated_normal_of_bits, jit_compile=True, autograph=False)
        got = compiled(tf.constant(mantissas << np.uint32(9))).numpy()
    want = numpy_init._truncated_normal_of_mantissa(mantissas, -2.0, 2.0)
    return got.tobytes() == want.tobytes()


@functools.lru_cache(maxsize=64)
def _compiled(dim: int, features: int):
    """One XLA program per shape: both kernels from their keys, `(2, 2)` uint32."""

    @tf.function(jit_compile=True, autograph=False)
    def both(keys: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return _lecun_normal(keys[0], (dim, features)), _lecun_normal(keys[1], (features, features))

    return both


def kernels(seed: int, dim: int, features: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Flax's kernels `(D, F)` and `(F, F)` for a checked seed, as eager float32 tensors.

    They are made eagerly even while a graph is being traced (`init_scope`),
    as variables' initial values are; a graph that wants them as constants
    should take the numpy init's arrays instead.
    """
    with tf.init_scope(), tf.device("/CPU:0"):
        # Past int32 counters, or on an XLA that rounds erf_inv otherwise: the numpy init.
        if max(dim, features) * features > MAX_ELEMENTS or not xla_rounds_as_jax():
            params = numpy_init.canonical_params(seed, dim, features)
            return tf.constant(params.w1), tf.constant(params.w2)
        keys = np.stack([dense_kernel_key(seed, layer) for layer in (0, 1)])
        return _compiled(dim, features)(tf.constant(keys))


def canonical_params(seed: Any, dim: int, features: Any) -> Params:
    """`_canonical_init.canonical_params(seed, dim, features)`, the kernels made by XLA.

    The seed and F are checked as the contract checks them; D is an int >= 1.
    """
    seed, features, dim = check_seed(seed), check_features(features), check_dim(dim)
    check_sizes(dim, features, dim_name="dim")
    w1, w2 = kernels(seed, dim, features)
    zeros = np.zeros(features, np.float32)
    return Params(w1=w1.numpy(), b1=zeros, w2=w2.numpy(), b2=zeros)
