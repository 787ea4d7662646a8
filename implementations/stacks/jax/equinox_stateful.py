"""The block with variables and RNGs in Equinox: `eqx.nn.BatchNorm(mode="batch")`,
`eqx.nn.Dropout`, `eqx.filter_checkpoint`, the state in an `eqx.nn.State`.

Equinox's layers see one example: the block is `jax.vmap`ped over the batch with
`axis_name="batch"` (BatchNorm's statistics are `pmean`s over it), each row its own dropout
key. `mode="batch"` is Flax's update (zeros and ones, 0.99 of the old value kept, a
`batch_counter`); the default, "ema", sets the running statistics to the first batch's. The
key is threaded as plain JAX threads it: split once per step, the first half handed back.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...stateful import DEFAULT_VARIANT, MOMENTUM, StateStep
from . import stateful as front

AXIS = "batch"


class Block(eqx.Module):
    """`Linear -> BatchNorm -> relu -> Dropout -> Linear` on one example `(D,) -> (F,)`."""

    linear1: eqx.nn.Linear
    norm: eqx.nn.BatchNorm
    dropout: eqx.nn.Dropout
    linear2: eqx.nn.Linear

    def __init__(self, dim: int, features: int, rate: float, key: jax.Array):
        first, second = jax.random.split(key)
        self.linear1 = eqx.nn.Linear(dim, features, key=first)  # weight (F, D)
        self.norm = eqx.nn.BatchNorm(features, AXIS, momentum=MOMENTUM, mode="batch")
        self.dropout = eqx.nn.Dropout(rate)
        self.linear2 = eqx.nn.Linear(features, features, key=second)

    def __call__(self, x, state, key):
        h, state = self.norm(self.linear1(x), state)
        return self.linear2(self.dropout(jax.nn.relu(h), key=key)), state


def build(seed: int, dim: int, features: int, rate: float):
    """The Block holding the canonical parameters (Equinox's weights are `(out, in)`) and its
    initial state."""
    model, state = eqx.nn.make_with_state(Block)(dim, features, rate, jax.random.PRNGKey(0))
    arrays = front.initial(seed, dim, features)
    model = eqx.tree_at(
        lambda m: (m.linear1.weight, m.linear1.bias, m.norm.weight, m.norm.bias,
                   m.linear2.weight, m.linear2.bias),
        model,
        (arrays["w1"].T, arrays["b1"], arrays["gamma"], arrays["beta"], arrays["w2"].T,
         arrays["b2"]),
    )  # fmt: skip
    return model, state


@functools.lru_cache(maxsize=8)
def compiled_step(checkpoint: bool):
    """`(model, state, x, key, cotangent) -> (y, model's gradients, x's, new state, next key)`."""

    def batched(model, x, state, keys):
        return jax.vmap(model, in_axes=(0, None, 0), out_axes=(0, None), axis_name=AXIS)(
            x, state, keys
        )

    region = eqx.filter_checkpoint(batched) if checkpoint else batched

    @functools.partial(eqx.filter_jit, compiler_options=front.STEP_COMPILE)
    def step(model, state, x, key, cotangent):
        key, draw = jax.random.split(key)
        keys = jax.random.split(draw, x.shape[0])  # one per row

        def forward(model, x):
            return region(model, x, state, keys)

        y, pullback, state = eqx.filter_vjp(forward, model, x, has_aux=True)
        grads, gx = pullback(cotangent)
        return y, grads, gx, state, key

    return step


def equinox_state_step(
    seed: Any, x: Any, features: Any, rate: Any, cotangent: Any, checkpoint: bool
) -> StateStep:
    """One training step of the Equinox Block from `seed`."""
    seed, x, features, rate, cotangent = front.checked(seed, x, features, rate, cotangent)
    model, state = build(seed, x.shape[1], features, rate)
    key = front.dropout_key(seed)
    with front.observed_masks() as masks:
        y, grads, gx, state, after = compiled_step(bool(checkpoint))(
            model, state, jnp.asarray(x), key, jnp.asarray(cotangent)
        )
        jax.block_until_ready((y, gx, after))
    # Under vmap each row's draw reaches the callback alone, in row order: B rows a run.
    batch = x.shape[0]
    masks = [np.stack(masks[i : i + batch]) for i in range(0, len(masks), batch)]
    norm = model.norm
    mean, var = state.get(norm.batch_state_index)
    named = {
        "w1": grads.linear1.weight.T, "b1": grads.linear1.bias, "gamma": grads.norm.weight,
        "beta": grads.norm.bias, "w2": grads.linear2.weight.T, "b2": grads.linear2.bias,
        "x": gx,
    }  # fmt: skip
    return front.make_step(
        y, named, masks, mean, var, rate=rate, before=key, after=after,
        counters={"batch_counter": int(state.get(norm.batch_counter))},
    )  # fmt: skip


class EquinoxStatefulBlock(front.StatefulFront):
    """`state_step` for the Equinox port."""

    state_variants: ClassVar[dict[str, str]] = {
        DEFAULT_VARIANT: "eqx.filter_checkpoint(vmap(Block)), BatchNorm mode='batch'"
    }
    run_state_step = staticmethod(equinox_state_step)
