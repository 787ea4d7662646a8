"""Flax's init of the exercise, in `jax.random` alone. Imports jax and numpy only.

Every JAX port that must not (plain JAX, Equinox) or cannot (Flax NNX, whose
`nnx.Rngs` derives keys its own way) let Flax linen make its parameters gets
them here, equal to `FlaxLinen().init_params` to the bit on XLA:CPU (1 ulp
anywhere, with jax's default `jax_threefry_partitionable=True`).

Flax derives each parameter's key by folding a SHA-1 of the scope name and
rng counter into `PRNGKey(seed)` (see `_canonical_init.keys`), draws the `Dense` kernel
from `lecun_normal` in its `(in, out)` shape, and sets the bias to zeros.
`flax_init` draws the same bits in the same shape: the canonical layout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry2x32_p

from ...contract import Params, check_dim, check_features, check_seed, check_sizes
from ..numpy.keys import dense_kernel_fold_value
from .inputs import checked_x

# The standard deviation of a standard normal truncated to (-2, 2); lecun_normal
# divides by it so that the truncated draw has variance 1 / fan_in.
TRUNCATED_STDDEV = 0.87962566103423978


def lecun_normal(key: jax.Array, shape: tuple[int, int], *, out_in: bool = False) -> jax.Array:
    """`jax.nn.initializers.lecun_normal()(key, shape)`, Flax's `Dense` kernel init, spelled out.

    A standard normal truncated to (-2, 2), scaled to variance `1 / fan_in`.
    Every constant is float32 and rounded where jax rounds it, so the draw
    is bit-for-bit the same.

    With `out_in`, the same `(in, out)` values are computed in an `(out, in)`
    array (see `_truncated_normal_out_in`) and returned as its transpose: a
    port that keeps weights `(out, in)` transposes them back, and XLA folds
    the two transposes, where transposing a drawn kernel costs a copy.
    """
    fan_in = shape[0]  # a Dense kernel is (in, out)
    variance = jnp.array(1.0 / fan_in, jnp.float32)
    stddev = jnp.sqrt(variance) / jnp.array(TRUNCATED_STDDEV, jnp.float32)
    if out_in:
        return (_truncated_normal_out_in(key, shape) * stddev).T
    return jax.random.truncated_normal(key, -2, 2, shape, jnp.float32) * stddev


# Jitted, as jax's own `_truncated_normal` is: op by op, XLA rounds some
# elements differently (1 ulp) from the fused computation.
@functools.partial(jax.jit, static_argnums=1)
def _truncated_normal_out_in(key: jax.Array, shape: tuple[int, int]) -> jax.Array:
    """`jax.random.truncated_normal(key, -2, 2, shape).T`, computed in the transposed layout.

    jax (with `jax_threefry_partitionable`, its default) draws element
    `(i, j)` of an `(in, out)` array from the threefry hash of its flat index
    `i * out + j`, then maps the bits elementwise. So the transpose is the
    hash of the transposed index array: no copy. The steps are jax's
    `_threefry_random_bits_partitionable`, `_uniform` and `_truncated_normal`,
    op for op (tests check every bit against `jax.random`).
    """
    if not jax.config.jax_threefry_partitionable:
        raise NotImplementedError("the (out, in) draw needs jax_threefry_partitionable=True")
    fan_in, fan_out = shape
    rows = jax.lax.broadcasted_iota(jnp.uint32, (fan_out, fan_in), 0)  # j
    cols = jax.lax.broadcasted_iota(jnp.uint32, (fan_out, fan_in), 1)  # i
    low = cols * jnp.uint32(fan_out) + rows  # the flat index in the (in, out) array
    high = jnp.zeros_like(low)  # < 2**32 elements: the high word is 0
    key = jax.random.key_data(key)  # a raw PRNGKey or a typed key: (2,) uint32
    bits1, bits2 = threefry2x32_p.bind(key[0], key[1], high, low)
    bits = bits1 ^ bits2
    # uniform(key, shape, float32, minval=a, maxval=b): 23 random mantissa bits in [1, 2).
    sqrt2 = np.array(np.sqrt(2), np.float32)
    lower = jax.lax.convert_element_type(-2, jnp.float32)
    upper = jax.lax.convert_element_type(2, jnp.float32)
    a, b = jax.lax.erf(lower / sqrt2), jax.lax.erf(upper / sqrt2)
    one = np.array(1.0, np.float32).view(np.uint32)
    float_bits = jax.lax.shift_right_logical(bits, jnp.uint32(32 - 23)) | jnp.uint32(one)
    floats = jax.lax.bitcast_convert_type(float_bits, jnp.float32) - jnp.float32(1.0)
    u = jax.lax.max(a, floats * (b - a) + a)
    out = sqrt2 * jax.lax.erf_inv(u)
    # Kept inside (lower, upper), as jax clips.
    return jnp.clip(
        out,
        jax.lax.nextafter(lower, np.array(np.inf, np.float32)),
        jax.lax.nextafter(upper, np.array(-np.inf, np.float32)),
    )


def flax_init(
    key: jax.Array, dim: int, features: int, *, out_in: bool = False
) -> tuple[jax.Array, ...]:
    """Flax's `MLP(features).init(key, x)` for x of width `dim`, canonical layout.

    **Arguments:**

    - `key`: the root key, `jax.random.PRNGKey(seed)`.
    - `dim`, `features`: D and F.
    - `out_in`: compute the kernels in `(out, in)` arrays (see `lecun_normal`).

    **Returns:** `(w1, b1, w2, b2)`: kernels `(D, F)`, `(F, F)`; zero biases `(F,)`.
    """
    # Flax folds a constant per scope into the root key; it never splits.
    # The bias's key (rng counter 2) is never used: zeros need none.
    k1 = jax.random.fold_in(key, jnp.uint32(dense_kernel_fold_value(0)))
    k2 = jax.random.fold_in(key, jnp.uint32(dense_kernel_fold_value(1)))
    zeros = jnp.zeros((features,), jnp.float32)
    w1 = lecun_normal(k1, (dim, features), out_in=out_in)
    w2 = lecun_normal(k2, (features, features), out_in=out_in)
    return w1, zeros, w2, zeros


def seed_array(seed: int) -> np.int64:
    """A checked seed as the argument a jitted function turns into `PRNGKey(seed)`.

    `PRNGKey(seed)` turns a Python int into `np.int64(seed)`, then into a jax
    array, which x32 mode cuts to its low 32 bits. jit converts an np.int64
    argument the same way, so the key can be made inside the compiled
    function: that saves an eager dispatch, about half of a warm call.
    """
    return np.int64(seed)


@functools.lru_cache(maxsize=64)
def jitted_init(dim: int, features: int, *, out_in: bool = False):
    """A compiled `seed_array(seed) -> flax_init(PRNGKey(seed), dim, features)`, one per shape.

    With `out_in`, the kernels come back in `(out, in)` arrays, untransposed (see
    `CompiledExercise`). One per process: every JAX port here shares it, and its compile
    (threefry and erf_inv: most of a port's compile for a new shape) is paid once.
    """

    def init(seed):
        arrays = flax_init(jax.random.PRNGKey(seed), dim, features, out_in=out_in)
        return _out_in_arrays(arrays) if out_in else arrays

    return jax.jit(init)


def _out_in_arrays(arrays: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
    """Canonical `(w1, b1, w2, b2)` with each kernel transposed (an involution)."""
    w1, b1, w2, b2 = arrays
    return w1.T, b1, w2.T, b2


def init_arrays(seed: Any, dim: int, features: int) -> tuple[np.ndarray, ...]:
    """Flax's `(w1, b1, w2, b2)` for a checked seed, as numpy arrays (canonical layout)."""
    return tuple(np.asarray(a) for a in jitted_init(dim, features)(seed_array(seed)))


def init_params(seed: Any, dim: int, features: Any) -> Params:
    """`Implementation.init_params` for ports whose init is this module's: checked, canonical."""
    seed, features, dim = check_seed(seed), check_features(features), check_dim(dim)
    check_sizes(dim, features, dim_name="dim")
    return Params(*init_arrays(seed, dim, features))


class CompiledExercise:
    """`nn_checkpoint_forward` for a JAX port: the checks, Flax's init (`jitted_init`), then
    the port's checkpointed MLP, compiled.

    **Arguments:**

    - `apply`: `(w1, b1, w2, b2), x -> (F,)`, the port's checkpointed MLP on
      canonical-layout arrays (traced).
    - `out_in`: draw the kernels in `(out, in)` arrays, for a port whose
      weights are `(out, in)` (see `lecun_normal`).

    The init is its own compiled call, one per shape shared by every JAX port in
    the process: compiling it costs about ten times the MLP's, and a port's own
    compile is then the MLP alone. The seed is an argument and the key is made
    inside the init, so a new seed dispatches without tracing again. With
    `out_in`, the init hands over `(out, in)` kernels and the apply transposes
    them back inside its compiled call, where XLA folds that transpose into the
    port's own (`to_native`'s): no copy either side.
    """

    def __init__(
        self,
        apply: Callable[[tuple[jax.Array, ...], jax.Array], jax.Array],
        *,
        out_in: bool = False,
    ):
        self.out_in = out_in
        self.apply = jax.jit(
            lambda arrays, x: apply(_out_in_arrays(arrays) if out_in else arrays, x)
        )

    def __call__(self, seed: Any, x: Any, features: Any) -> jax.Array:
        seed, features, x = check_seed(seed), check_features(features), checked_x(x)
        check_sizes(x.shape[0], features)  # before the compile: XLA aborts past int32 sizes
        arrays = jitted_init(x.shape[0], features, out_in=self.out_in)(seed_array(seed))
        return self.apply(arrays, x)
