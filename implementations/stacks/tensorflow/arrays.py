"""Tensors in and out of the TensorFlow ports: x and integer arguments checked, eager or
symbolic, and tensors back to numpy. Imports TensorFlow, numpy and the contract only.

Inside a `tf.function` the arguments are symbolic: x's shape and dtype are
checked, its values cannot be (as for a JAX tracer), and `seed` and
`features` must be known while tracing (Python values, or tensors TensorFlow
can fold to constants).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...contract import check_x, check_x_spec, check_x_values
from .runtime import tf

NATIVE = (tf.Tensor, tf.Variable)


def is_symbolic(value: Any) -> bool:
    """Whether `value` is a graph tensor (inside a `tf.function` trace): no value yet."""
    return isinstance(value, tf.Tensor) and not hasattr(value, "numpy")


def to_host_array(array: Any) -> np.ndarray:
    """A tensor or variable (or anything numpy reads) as a numpy array."""
    if isinstance(array, NATIVE):
        return np.asarray(array.numpy())
    return np.asarray(array)


def float32_tensor(array: Any) -> tf.Tensor:
    """An array-like as a float32 tensor (a copy when it was not float32 numpy)."""
    return tf.constant(np.asarray(array, np.float32))


def from_host_array(array: np.ndarray) -> tf.Tensor:
    """A numpy array as a tensor of the same dtype, copied."""
    return tf.constant(np.array(array, copy=True))


def integer_argument(value: Any, name: str) -> Any:
    """`seed` or `features` as the contract's checks take it: a tensor becomes its value.

    An eager tensor gives its numpy value (a 0-d array or more: the contract
    names the argument if that is wrong). A symbolic one must fold to a
    constant; otherwise it has no value while the model is built.
    """
    if isinstance(value, tf.Variable):
        value = tf.convert_to_tensor(value)
    if not isinstance(value, tf.Tensor):
        return value
    if not is_symbolic(value):
        return value.numpy()
    folded = tf.get_static_value(value)
    if folded is None:
        raise TypeError(
            f"{name} must be a concrete scalar, not a symbolic tensor; inside tf.function "
            "pass a Python int (each value traces once)"
        )
    return folded


def as_input(x: Any) -> tf.Tensor:
    """x as a checked float32 `(D,)` tensor; raise naming `x` for anything else.

    A tensor or variable stays on the tape (the cast is an op a
    `GradientTape` records), and is never changed. Numpy arrays and lists
    become a fresh constant from the contract's checked copy.
    """
    if isinstance(x, tf.Variable):
        x = tf.convert_to_tensor(x)  # a read the tape records, when x is watched
    if not isinstance(x, tf.Tensor):
        return tf.constant(check_x(x))
    if x.shape.rank is None or (x.shape.rank == 1 and x.shape[0] is None):
        raise ValueError(f"x must have a static shape (D,), got {x.shape}")
    check_x_spec(tuple(x.shape), x.dtype.name)
    if not is_symbolic(x):
        check_x_values(x.numpy())  # raises for NaN, inf and float32 overflow
    return tf.cast(x, tf.float32)  # x itself when it is float32 already
