"""The block with variables and RNGs in Haiku: `hk.BatchNorm`, `hk.dropout`, `hk.remat`, under
`hk.transform_with_state`.

`hk.BatchNorm` keeps its running statistics as zero-debiased moving averages
(`ExponentialMovingAverage`): its `average` after one update is the batch's own statistic.
The port reports the `hidden` value, which is Flax's update from zeros (the variance's from
0, not 1: declared `var_start=0`), and the moving average's `counter`. The dropout key is
`hk.next_rng_key()` of the apply's key, threaded as plain JAX threads it (split once per
step, the first half handed back).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import haiku as hk
import jax
import jax.numpy as jnp

from ...stateful import DEFAULT_VARIANT, EPSILON, MOMENTUM, StateStep
from . import stateful as front


def block(x: jax.Array, features: int, rate: float) -> jax.Array:  # (B, D) -> (B, F)
    """`hk.Linear -> hk.BatchNorm -> relu -> hk.dropout -> hk.Linear`, in training mode."""
    h = hk.Linear(features, name="linear1")(x)
    h = hk.BatchNorm(True, True, MOMENTUM, eps=EPSILON, name="norm")(h, is_training=True)
    h = jax.nn.relu(h)
    if rate > 0.0:
        h = hk.dropout(hk.next_rng_key(), rate, h)
    return hk.Linear(features, name="linear2")(h)


@functools.lru_cache(maxsize=32)
def transformed(features: int, rate: float, checkpoint: bool) -> hk.TransformedWithState:
    """The block under `hk.remat` (or plain), transformed with state."""
    run = functools.partial(block, features=features, rate=rate)
    return hk.transform_with_state(lambda x: (hk.remat(run) if checkpoint else run)(x))


def to_haiku(arrays: dict) -> tuple[dict, dict]:
    """The canonical arrays as Haiku's params (kernels `(in, out)`, BatchNorm's `(1, F)`) and
    its state (the moving averages' hidden values from zeros, as `hk.BatchNorm` starts)."""
    features = arrays["b1"].shape[0]
    zeros = jnp.zeros((1, features), jnp.float32)
    params = {
        "linear1": {"w": arrays["w1"], "b": arrays["b1"]},
        "linear2": {"w": arrays["w2"], "b": arrays["b2"]},
        "norm": {"scale": arrays["gamma"][None], "offset": arrays["beta"][None]},
    }
    ema = {"average": zeros, "counter": jnp.zeros((), jnp.int32), "hidden": zeros}
    return params, {"norm/~/mean_ema": ema, "norm/~/var_ema": dict(ema)}


@functools.lru_cache(maxsize=32)
def compiled_step(features: int, rate: float, checkpoint: bool):
    """`(params, state, x, key, cotangent) -> (y, gradients, x's, new state, next key)`."""
    apply = transformed(features, rate, checkpoint).apply

    def step(params, state, x, key, cotangent):
        key, draw = jax.random.split(key)
        y, pullback, state = jax.vjp(lambda p, x: apply(p, state, draw, x), params, x, has_aux=True)
        grads, gx = pullback(cotangent)
        return y, grads, gx, state, key

    return jax.jit(step, compiler_options=front.STEP_COMPILE)


def haiku_state_step(
    seed: Any, x: Any, features: Any, rate: Any, cotangent: Any, checkpoint: bool
) -> StateStep:
    """One training step of the Haiku block from `seed`."""
    seed, x, features, rate, cotangent = front.checked(seed, x, features, rate, cotangent)
    params, state = to_haiku(front.initial(seed, x.shape[1], features))
    key = front.dropout_key(seed)
    # hk.BatchNorm's moving average raises its decay to an int32 counter (decay ** counter),
    # which strict dtype promotion (the suite's tests) refuses: Haiku's code, not the port's.
    with front.observed_masks() as masks, jax.numpy_dtype_promotion("standard"):
        y, grads, gx, state, after = compiled_step(features, rate, bool(checkpoint))(
            params, state, x, key, cotangent
        )
        jax.block_until_ready((y, gx, after))
    mean, var = state["norm/~/mean_ema"], state["norm/~/var_ema"]
    named = {
        "w1": grads["linear1"]["w"], "b1": grads["linear1"]["b"],
        "gamma": grads["norm"]["scale"][0], "beta": grads["norm"]["offset"][0],
        "w2": grads["linear2"]["w"], "b2": grads["linear2"]["b"], "x": gx,
    }  # fmt: skip
    return front.make_step(
        y, named, masks, mean["hidden"][0], var["hidden"][0], rate=rate, before=key,
        after=after, counters={"counter": int(mean["counter"])},
    )  # fmt: skip


class HaikuStatefulBlock(front.StatefulFront):
    """`state_step` for the Haiku port."""

    state_variants: ClassVar[dict[str, str]] = {DEFAULT_VARIANT: "hk.remat(block)"}
    run_state_step = staticmethod(haiku_state_step)
