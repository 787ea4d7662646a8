"""Mutants of the canonical Flax linen port, one bug each (declared in `manifest`).

They reuse the canonical port's compiled functions wherever their bug
allows, so that the mutation run costs little beyond the suite itself.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from implementations.composition import case_of
from implementations.contract import (
    SEED_MAX,
    SizeLimitError,
    byte_budget,
    check_features,
    check_seed,
    check_sizes,
)
from implementations.policies import FULL
from implementations.stacks.jax import checked_x, flax_linen
from implementations.stacks.jax.flax_linen import MLP, FlaxLinen, init_and_apply


class NoCheckpoint(FlaxLinen):
    """Plain MLP everywhere: the forward values are right, nothing is rematerialized."""

    checkpointed = MLP


class CheckpointOffGradPath(FlaxLinen):
    """Inits through the checkpointed MLP, but applies (and so differentiates) the plain one."""

    def nn_checkpoint_forward(self, seed, x, features):
        seed, features, x = check_seed(seed), check_features(features), checked_x(x)
        check_sizes(x.shape[0], features)  # one bug each: the size limits hold
        key = jax.random.PRNGKey(seed)
        init = flax_linen.compiled_init(self.initializer, features)
        variables = init(key, jax.lax.stop_gradient(x))
        return flax_linen.compiled_apply(MLP, features)(variables, x).ravel()


class SavesEverything(FlaxLinen):
    """nn.checkpoint with `everything_saveable`: the region exists, nothing is recomputed."""

    checkpointed = nn.checkpoint(MLP, policy=jax.checkpoint_policies.everything_saveable)


class _TorchStyleMLP(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        def uniform(fan_in):
            bound = 1.0 / np.sqrt(fan_in)
            return lambda key, shape, dtype=jnp.float32: jax.random.uniform(
                key, shape, dtype, -bound, bound
            )

        x = nn.Dense(
            self.features, kernel_init=uniform(x.shape[-1]), bias_init=uniform(x.shape[-1])
        )(x)
        x = nn.relu(x)
        return nn.Dense(
            self.features, kernel_init=uniform(self.features), bias_init=uniform(self.features)
        )(x)


class UniformInit(FlaxLinen):
    """Another framework's default init: uniform kernels and non-zero uniform biases."""

    checkpointed = initializer = nn.checkpoint(_TorchStyleMLP)
    plain = _TorchStyleMLP


class _ParamBug(FlaxLinen):
    """Computes with `bug(w1, b1, w2, b2)` instead of the parameters it has."""

    @staticmethod
    def bug(w1, b1, w2, b2):
        raise NotImplementedError

    def to_native(self, w1, b1, w2, b2):
        return super().to_native(*self.bug(w1, b1, w2, b2))

    def nn_checkpoint_forward(self, seed, x, features):
        seed, features, x = check_seed(seed), check_features(features), checked_x(x)
        check_sizes(x.shape[0], features)  # one bug each: the size limits hold
        init = flax_linen.compiled_init(self.initializer, features)
        variables = init(jax.random.PRNGKey(seed), jax.lax.stop_gradient(x))
        bugged = self.to_native(*self.to_canonical(variables))
        return flax_linen.compiled_apply(self.checkpointed, features)(bugged, x).ravel()


class DroppedBias(_ParamBug):
    """Dense_1's bias is never added."""

    @staticmethod
    def bug(w1, b1, w2, b2):
        return w1, b1, w2, 0 * b2


class BiasOffByAThousandth(_ParamBug):
    """Both biases are off by one part in a thousand."""

    @staticmethod
    def bug(w1, b1, w2, b2):
        return w1, b1 * 1.001, w2, b2 * 1.001


class TransposedKernel(_ParamBug):
    """Dense_1's kernel is used transposed, as a careless port from torch's layout would."""

    @staticmethod
    def bug(w1, b1, w2, b2):
        return w1, b1, w2.T, b2


class _LastReluMLP(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.features)(x))
        return nn.relu(nn.Dense(self.features)(x))


class ReluAfterLastLayer(FlaxLinen):
    """A relu after the last layer too."""

    checkpointed = nn.checkpoint(_LastReluMLP)
    plain = _LastReluMLP


def _low_precision_mlp(dtype):
    class LowPrecisionMLP(nn.Module):
        features: int

        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(self.features, dtype=dtype)(x))
            return nn.Dense(self.features, dtype=dtype)(x).astype(jnp.float32)

    return LowPrecisionMLP


_Bf16MLP = _low_precision_mlp(jnp.bfloat16)
_F16MLP = _low_precision_mlp(jnp.float16)


class Bfloat16Compute(FlaxLinen):
    """The Dense layers compute in bfloat16 (float32 params, float32 output)."""

    checkpointed = nn.checkpoint(_Bf16MLP)
    plain = _Bf16MLP


class Float16Compute(FlaxLinen):
    """The Dense layers compute in float16 (float32 params, float32 output)."""

    checkpointed = nn.checkpoint(_F16MLP)
    plain = _F16MLP


# --- lower-precision arithmetic: the precision tier's mutants ---------------------------
# Each passes the rigorous bound at D = F = 256 and 1024 (tests/core/checking/test_precision.py),
# where only the precision tier (i) sees it.


def _tf32(a):
    """float32 rounded to TF32's 10-bit mantissa (nearest even), kept in float32."""
    return jax.lax.reduce_precision(a, exponent_bits=8, mantissa_bits=10)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _tf32_dot(lhs, rhs, dimension_numbers):
    return jax.lax.dot_general(_tf32(lhs), _tf32(rhs), dimension_numbers)


def _tf32_dot_forward(lhs, rhs, dimension_numbers):
    lhs, rhs = _tf32(lhs), _tf32(rhs)
    return jax.lax.dot_general(lhs, rhs, dimension_numbers), (lhs, rhs)


def _tf32_dot_backward(dimension_numbers, residuals, cotangent):
    # The backward matmuls in TF32 too: both of each one's operands rounded.
    _, pull_back = jax.vjp(lambda a, b: jax.lax.dot_general(a, b, dimension_numbers), *residuals)
    return pull_back(_tf32(cotangent))


_tf32_dot.defvjp(_tf32_dot_forward, _tf32_dot_backward)


def tf32_dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """`lax.dot_general` as a TF32 tensor core computes it: operands rounded to 10 mantissa
    bits, products and sums in float32 (what JAX's default precision does on an Ampere GPU)."""
    return _tf32_dot(lhs, rhs, dimension_numbers)


class _Tf32MLP(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.features, dot_general=tf32_dot_general)(x))
        return nn.Dense(self.features, dot_general=tf32_dot_general)(x)


class Tf32Matmul(FlaxLinen):
    """Every matmul, forward and backward, in TF32: operands to 10 mantissa bits."""

    checkpointed = nn.checkpoint(_Tf32MLP)
    plain = _Tf32MLP


class _Float16InputMLP(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        x = x.astype(jnp.float16).astype(jnp.float32)  # a float16 data pipeline
        x = nn.relu(nn.Dense(self.features)(x))
        return nn.Dense(self.features)(x)


class Float16Inputs(FlaxLinen):
    """x is rounded to float16 on the way in (and its gradient on the way out)."""

    checkpointed = nn.checkpoint(_Float16InputMLP)
    plain = _Float16InputMLP


def _bf16(a):
    return a.astype(jnp.bfloat16).astype(jnp.float32)


class Bfloat16WeightsOnly(_ParamBug):
    """The kernels are kept in bfloat16 (8 significant bits); x, biases and the arithmetic
    stay float32."""

    @staticmethod
    def bug(w1, b1, w2, b2):
        return _bf16(w1), b1, _bf16(w2), b2


class BiasOffByATenThousandth(_ParamBug):
    """Both biases are off by one part in ten thousand."""

    @staticmethod
    def bug(w1, b1, w2, b2):
        return w1, b1 * 1.0001, w2, b2 * 1.0001


class SeedPlusOne(FlaxLinen):
    """An off-by-one seed: PRNGKey(seed + 1), wrapping at the top of the range."""

    def init_params(self, seed, dim, features):
        return super().init_params((check_seed(seed) + 1) & SEED_MAX, dim, features)

    def nn_checkpoint_forward(self, seed, x, features):
        return super().nn_checkpoint_forward((check_seed(seed) + 1) & SEED_MAX, x, features)


class MutatesX(FlaxLinen):
    """Clamps the caller's x at zero, in place, before using it."""

    def nn_checkpoint_forward(self, seed, x, features):
        out = super().nn_checkpoint_forward(seed, x, features)  # validates x first
        if isinstance(x, np.ndarray):
            np.maximum(x, 0, out=x)
        elif isinstance(x, list):
            x[:] = [max(v, 0.0) for v in x]
        return out


class NotFlattened(FlaxLinen):
    """Returns the output as (1, F)."""

    def nn_checkpoint_forward(self, seed, x, features):
        return super().nn_checkpoint_forward(seed, x, features).reshape(1, -1)


class TruncatesSeed(FlaxLinen):
    """`int(seed)` with no checks: 1.5 runs as seed 1, True as seed 1."""

    def nn_checkpoint_forward(self, seed, x, features):
        return init_and_apply(
            self.checkpointed, int(seed), x, features, init_module=self.initializer
        )


class WrongErrorType(FlaxLinen):
    """Reports a non-finite x as a TypeError."""

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any):
        try:
            return super().nn_checkpoint_forward(seed, x, features)
        except ValueError as error:
            if "finite" in str(error):
                raise TypeError(str(error)) from None
            raise


class NotRepeatable(FlaxLinen):
    """Each call adds a growing multiple of 1e-7: close, but not the same twice."""

    def __init__(self):
        super().__init__()
        self._calls = itertools.count()

    def nn_checkpoint_forward(self, seed, x, features):
        out = super().nn_checkpoint_forward(seed, x, features)
        return out + jnp.float32(1e-7) * next(self._calls)


class VagueErrors(FlaxLinen):
    """Raises the contract's exception types, but a bad x's message names nothing."""

    def nn_checkpoint_forward(self, seed, x, features):
        try:
            return super().nn_checkpoint_forward(seed, x, features)
        except (TypeError, ValueError) as error:
            if re.search(r"\bx\b", str(error)):  # the contract's message about x
                raise type(error)("expected a valid input") from None
            raise


class UncheckedSizes(FlaxLinen):
    """No size limits: the byte budget is never read, and a call past int32 element
    counts ends in the allocator's MemoryError (as torch's did), not the contract's error."""

    def nn_checkpoint_forward(self, seed, x, features):
        with byte_budget(2**63):  # more than any machine holds
            try:
                return super().nn_checkpoint_forward(seed, x, features)
            except SizeLimitError:
                # What the allocation would have raised, raised without making it:
                # XLA would abort the worker instead (the reason for the limits).
                raise MemoryError("Unable to allocate the parameters") from None


class TwiceWrapsOnce(FlaxLinen):
    """Declares `twice` (`nn.checkpoint(nn.checkpoint(MLP))`) and wraps once: the values and
    what is kept are the canonical's, and only (k)'s count of regions sees the second wrap
    missing."""

    def apply(self, variables: dict, x: jax.Array, checkpoint: Any) -> jax.Array:
        return super().apply(variables, x, FULL if case_of(checkpoint) == "twice" else checkpoint)
