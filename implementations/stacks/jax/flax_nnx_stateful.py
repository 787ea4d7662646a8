"""The block with variables and RNGs in Flax NNX: `nnx.BatchNorm`, `nnx.Dropout`, `nnx.remat`.

The parameters are the canonical ones, set into the modules (NNX derives its init keys
otherwise: `flax_nnx`'s docstring); the dropout stream is `nnx.Rngs(dropout=dropout_key(seed))`,
which `nnx.Dropout` keeps (a key and a counter that each draw advances): the port's RNG
state. One step is `nnx.value_and_grad` of `<y, cotangent>` under `nnx.jit`; the BatchNorm
statistics and the stream's counter come back updated in the module.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from ...stateful import DEFAULT_VARIANT, StateStep
from .stateful import StatefulFront, checked, dropout_key, initial, make_step, observed_masks


class Block(nnx.Module):
    """`nnx.Linear -> nnx.BatchNorm -> relu -> nnx.Dropout -> nnx.Linear`, in training mode."""

    def __init__(self, dim: int, features: int, rate: float, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(dim, features, rngs=rngs)  # kernel (D, F)
        self.norm = nnx.BatchNorm(features, rngs=rngs)  # momentum 0.99, epsilon 1e-5
        self.dropout = nnx.Dropout(rate, rngs=rngs)  # keeps the 'dropout' stream
        self.linear2 = nnx.Linear(features, features, rngs=rngs)  # kernel (F, F)

    def plain(self, x: jax.Array) -> jax.Array:  # (B, D) -> (B, F)
        return self.linear2(self.dropout(nnx.relu(self.norm(self.linear1(x)))))

    # On the unbound method, as `flax_nnx.MLP.checkpointed` (bound methods are refused).
    @nnx.remat
    def checkpointed(self, x: jax.Array) -> jax.Array:
        return self.plain(x)


#: BatchNorm's variables and the canonical arrays they start from.
NORM = {"scale": "gamma", "bias": "beta", "mean": "mean", "var": "var"}


def _array(found: Any) -> Any:
    """A gradient leaf as its array (a variable's value, read without the deprecated `.value`)."""
    return found.get_value() if hasattr(found, "get_value") else found


def build(seed: int, dim: int, features: int, rate: float) -> Block:
    """A Block holding the canonical parameters and statistics, its stream `dropout_key(seed)`."""
    model = Block(dim, features, rate, rngs=nnx.Rngs(params=0, dropout=dropout_key(seed)))
    arrays = initial(seed, dim, features)
    for layer, kernel, bias in ((model.linear1, "w1", "b1"), (model.linear2, "w2", "b2")):
        layer.kernel.set_value(jnp.asarray(arrays[kernel]))
        layer.bias.set_value(jnp.asarray(arrays[bias]))
    # set_value/get_value: flax 0.12 deprecates `.value` (a DeprecationWarning the tests raise)
    for name in ("scale", "bias", "mean", "var"):
        getattr(model.norm, name).set_value(jnp.asarray(arrays[NORM[name]]))
    return model


@functools.lru_cache(maxsize=8)
def compiled_step(checkpoint: bool):
    """`(model, x, cotangent) -> (y, parameter gradients, x's gradient)`, `nnx.jit`ted; the
    module's statistics and stream are updated in place."""

    def loss(model: Block, x, cotangent):
        y = model.checkpointed(x) if checkpoint else model.plain(x)
        return jnp.sum(y * cotangent), y

    def step(model: Block, x, cotangent):
        (_, y), (grads, gx) = nnx.value_and_grad(loss, argnums=(0, 1), has_aux=True)(
            model, x, cotangent
        )
        return y, grads, gx

    return nnx.jit(step)


def stream(model: Block) -> tuple[int, ...]:
    """The dropout stream's state: its key's words and its counter."""
    rngs = model.dropout.rngs
    key = np.asarray(jax.random.key_data(rngs.key.get_value())).ravel()
    return (*(int(k) for k in key), int(rngs.count.get_value()))


def nnx_state_step(
    seed: Any, x: Any, features: Any, rate: Any, cotangent: Any, checkpoint: bool
) -> StateStep:
    """One training step of the NNX Block from `seed`."""
    seed, x, features, rate, cotangent = checked(seed, x, features, rate, cotangent)
    model = build(seed, x.shape[1], features, rate)
    before = stream(model)
    with observed_masks() as masks:
        y, grads, gx = compiled_step(bool(checkpoint))(model, x, cotangent)
        jax.block_until_ready((y, gx))
    named = {
        "w1": grads["linear1"]["kernel"], "b1": grads["linear1"]["bias"],
        "gamma": grads["norm"]["scale"], "beta": grads["norm"]["bias"],
        "w2": grads["linear2"]["kernel"], "b2": grads["linear2"]["bias"], "x": gx,
    }  # fmt: skip
    return make_step(
        y, {k: _array(v) for k, v in named.items()}, masks, model.norm.mean.get_value(),
        model.norm.var.get_value(), rate=rate, before=before, after=stream(model),
    )  # fmt: skip


class NnxStatefulBlock(StatefulFront):
    """`state_step` for the NNX port."""

    state_variants: ClassVar[dict[str, str]] = {DEFAULT_VARIANT: "nnx.remat(Block.plain)"}
    run_state_step = staticmethod(nnx_state_step)
