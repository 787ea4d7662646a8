"""The Keras 3 port on the JAX backend: the MLP made inside `keras.RematScope(mode="full")`.

On JAX, Keras's remat is `jax.checkpoint` around the MLP's `call`. The
model (`implementations.stacks.keras.model`, shared by the three Keras ports) runs through
Keras's `stateless_call`, its weights passed in as arrays, so the port is a
`JaxPort`: the native parameters are the MLP's `trainable_variables` in
order, `[dense_0.kernel (D, F), dense_0.bias, dense_1.kernel (F, F),
dense_1.bias]`, kernels `(in, out)` as the canonical layout (only shapes are
checked). Its evidence is JAX's (the jaxpr residuals). The parameters are
Flax's init in `jax.random`, as the other JAX ports draw them (the same
bits as the numpy init): `init_params` loads them into a Keras model and
reads them back; `nn_checkpoint_forward` draws them compiled with the MLP.

Loading it imports Keras on the JAX backend, or raises
`contract.StackUnavailable` if Keras runs on another backend in this process.
Imports jax, keras, numpy and the project's numpy-only modules.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import jax

from implementations.composition import case_of
from implementations.stacks import keras as keras_stack
from implementations.stacks.jax import JaxPort

STACK = keras_stack.on("jax")  # before anything imports keras: it reads its backend once

from implementations.stacks.keras import model  # noqa: E402 - imports keras, now on JAX
from implementations.stacks.keras import stateful_jax as block_on_jax  # noqa: E402
from implementations.stacks.keras.port import COMPOSITIONS, KerasPort  # noqa: E402
from implementations.stateful import DEFAULT_VARIANT  # noqa: E402

# [dense_0.kernel (D, F), dense_0.bias (F,), dense_1.kernel (F, F), dense_1.bias (F,)]
Weights = list


@functools.lru_cache(maxsize=64)
def _skeleton(
    dim: int, features: int, mode: str | None, nesting: str = "once"
) -> model.MLP | model.Nested:
    # A stateless call replaces every weight, so the model's own values are
    # never read. Built eagerly even when first asked for under a trace.
    with jax.ensure_compile_time_eval():
        return model.skeleton(dim, features, mode=mode, nesting=nesting)


class KerasJax(KerasPort, JaxPort):
    """Keras 3 on JAX: `keras.RematScope(mode="full")`, that is `jax.checkpoint`."""

    name = "keras_jax"
    stack = STACK
    # twice in Keras's API (`apply`, `model.Nested`); under_trainer is the JAX base's trainer
    # region, an outer jax.checkpoint over the model call (`JaxPort.composed`).
    compositions: ClassVar[dict[str, str]] = {
        "once": COMPOSITIONS["once"],
        "twice": COMPOSITIONS["twice"],
        "under_trainer": "jax.checkpoint(model call) around the MLP made under "
        'keras.RematScope(mode="full")',
    }

    #: The block with variables and RNGs (property (l)): on JAX a Keras model runs stateless.
    state_variants: ClassVar[dict[str, str]] = {
        DEFAULT_VARIANT: "keras.remat(block.stateless_call), that is jax.checkpoint",
    }
    #: The backend's step of the block (`OffersStatefulBlock.state_step` runs it).
    block_step = staticmethod(block_on_jax.step)

    def to_native(self, w1, b1, w2, b2) -> Weights:
        features = w1.shape[1]  # w1 is (D, F), (in, out) as canonical
        assert w2.shape == (features, features), w2.shape  # (F, F), (in, out) as canonical
        assert b1.shape == b2.shape == (features,), (b1.shape, b2.shape)
        return [w1, b1, w2, b2]

    def to_canonical(self, weights: Weights) -> tuple:
        return tuple(weights)

    def apply(self, weights: Weights, x: jax.Array, checkpoint: Any) -> jax.Array:
        # A composition case (`Nesting`) is the model composed in Keras (`model.Nested`).
        mode = self.mode if self.policy(checkpoint) else None
        mlp = _skeleton(x.shape[0], weights[0].shape[1], mode, case_of(checkpoint))
        # Keras's own code adds a (F,) bias to (1, F) rows and mixes dtypes as
        # numpy does: allow that even where JAX is set to refuse it (this
        # project's tests raise on rank promotion in the ports' own code).
        with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
            y, _ = mlp.stateless_call(list(weights), [], x)  # (D,) -> (F,)
        return y

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> Any:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)` in Keras on JAX, checkpointed.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
        - `x`: a finite real vector of shape `(D,)`: a jax array or tracer (it
          works under `jax.grad`, `jax.vmap`, and `jax.jit` with `seed` and
          `features` static), a `keras.Variable`, numpy or a list; or a symbolic
          `keras.KerasTensor` of shape `(D,)`, which gives the symbolic `(F,)`
          output (`keras.Model(x, y)` then runs the checkpointed MLP).
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 jax array.
        """
        if model.is_symbolic(x):
            return model.symbolic_exercise(seed, x, features, STACK.canonical_params)
        # Flax's init in jax.random, compiled with the MLP into one call per
        # shape (as the other JAX ports do): at D = F = 1024 the numpy init
        # alone took 5 times the whole compiled call.
        return self.compiled.exercise(seed, model.unwrap(x), features)


nn_checkpoint_forward = KerasJax.exported()
