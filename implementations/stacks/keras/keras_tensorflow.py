"""The Keras 3 port on the TensorFlow backend: the MLP made inside `keras.RematScope(mode="full")`.

On TensorFlow, Keras's remat is `tf.recompute_grad` around the MLP's `call`.
The model (`implementations.stacks.keras.model`, shared by the three Keras ports) holds its
weights in `tf.Variable`s, kernels `(in, out)` as the canonical layout, and
`recompute_grad` differentiates them as variables read inside the region
(the `tensorflow` port covers the other path, weights passed as arguments).
It runs stateful: under a `stateless_call` the rerun in the backward pass
reads the variables, not the weights passed in, and the weights get no
gradient (tests/keras/test_keras.py).

Evidence comes from TensorFlow's graph (the TensorFlow stack's `record`): of the
port's own `nn_checkpoint_forward` traced, and of the kept model that `vjp` runs
with its gradient (`vjp` itself takes numpy: a port overriding it is refused); the
parameters come from Flax's init compiled by XLA (the TensorFlow stack's `flax_init`),
both shared with the `tensorflow` port. Inside a `tf.function`, the exercise runs for
any (seed, D, F) whose model exists already: Keras makes variables, which a
`tf.function` may do on its first trace only (see `nn_checkpoint_forward`).

Loading it imports TensorFlow (quietly) and Keras on the TensorFlow backend,
or raises `contract.StackUnavailable` if Keras runs on another backend in
this process. Imports TensorFlow, keras, numpy and the project's numpy-only
modules.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np

from implementations.contract import BackwardRecord, Params, check_features, check_seed, check_sizes
from implementations.stacks import keras as keras_stack
from implementations.stacks.base import refuse_own_values
from implementations.stacks.tensorflow import as_input, float32_tensor, integer_argument, tf
from implementations.stacks.tensorflow.flax_init import canonical_params

STACK = keras_stack.on("tensorflow")  # before anything imports keras: it reads its backend once

from implementations.stacks.keras import model  # noqa: E402 - imports keras, now on TensorFlow
from implementations.stacks.keras import stateful_tensorflow as block_on_tf  # noqa: E402
from implementations.stacks.keras.port import StatefulKerasPort  # noqa: E402
from implementations.stateful import DEFAULT_VARIANT  # noqa: E402


@functools.lru_cache(maxsize=16)
def _exercise_model(seed: int, dim: int, features: int, mode: str | None = model.FULL) -> model.MLP:
    # One model per (seed, D, F), never changed: recompute_grad rereads the
    # variables in the backward pass, so they must hold the same values then.
    # Made outside any graph being traced (init_scope), as variables must be.
    with tf.init_scope():
        return model.build(canonical_params(seed, dim, features), mode=mode)


def exercise(seed: Any, x: Any, features: Any, mode: str | None = model.FULL) -> Any:
    """`nn_checkpoint_forward` with the model made under `RematScope(mode=mode)`."""
    seed = check_seed(integer_argument(seed, "seed"))
    features = check_features(integer_argument(features, "features"))
    if model.is_symbolic(x):
        return model.symbolic_exercise(seed, x, features, canonical_params)
    x = as_input(model.unwrap(x))
    check_sizes(x.shape[0], features)
    try:
        mlp = _exercise_model(seed, x.shape[0], features, mode)
    except ValueError as error:
        if "tf.Variable" not in str(error):
            raise
        raise ValueError(
            f"keras_tensorflow inside tf.function: the Keras model for seed {seed}, "
            f"D={x.shape[0]}, F={features} does not exist yet, and a tf.function may "
            "create variables on its first trace only; call nn_checkpoint_forward once "
            "eagerly with these values first (the model is kept), or use the tensorflow port"
        ) from error
    return mlp(x)


class KerasTensorFlow(StatefulKerasPort):
    """Keras 3 on TensorFlow: `keras.RematScope(mode="full")`, that is `tf.recompute_grad`."""

    name = "keras_tensorflow"
    stack = STACK
    #: `vjp` takes numpy and cannot be traced, so a port that overrides it is refused: the
    #: record traces the model `vjp` runs (`reused`, made under `RematScope(mode)`).
    model_methods = "mode (RematScope's) or reused (the kept Keras model)"
    #: The block with variables and RNGs (property (l)): as a user writes it, and the fix.
    state_variants: ClassVar[dict[str, str]] = {
        DEFAULT_VARIANT: "keras.remat(lambda x: block(x, training=True)), that is "
        "tf.recompute_grad, Dropout(rate, seed=seed mod 2**32)",
        "stateless": "keras.remat(block.stateless_call), the new statistics and seed state "
        "assigned outside the region",
    }
    #: The backend's step of the block (`OffersStatefulBlock.state_step` runs it).
    block_step = staticmethod(block_on_tf.step)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # `traced_record` traces the model with TensorFlow's own tape, never `gradients`.
        refuse_own_values(
            cls, KerasTensorFlow, "gradients", "traces the kept model under TensorFlow's own tape"
        )

    def model_input(self, x: np.ndarray) -> Any:
        return float32_tensor(x)

    def gradients(self, mlp: model.MLP, x: np.ndarray, weights: list, cotangent: np.ndarray):
        x = float32_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = mlp(x)
        dx, *grads = tape.gradient(y, [x, *weights], output_gradients=float32_tensor(cotangent))
        return dx, grads

    def traced_record(self, params: Params, x: np.ndarray, checkpoint: bool) -> BackwardRecord:
        # The very model `vjp` runs (`reused`), traced with its gradient. Kept per shape by
        # `backward_record`: the weights are variables.
        mlp = self.reused(params, checkpoint)
        return self.stack.record(
            mlp,
            [x],
            origins=("input",),
            cotangent=np.ones(params.features, np.float32),
            variables=[v.value for v in mlp.trainable_variables],
        )

    def before_exercise_trace(self, seed: Any, dim: int, features: int) -> None:
        # The model made eagerly: a traced graph cannot make variables (but on its first trace).
        _exercise_model(check_seed(seed), dim, features, self.mode)

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> Any:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)` in Keras on TensorFlow,
        checkpointed.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d
          array or tensor).
        - `x`: a finite real vector of shape `(D,)`: a `tf.Tensor`, a
          `tf.Variable` or `keras.Variable`, numpy or a list; or a symbolic
          `keras.KerasTensor` of shape `(D,)`, which gives the symbolic `(F,)`
          output. x is never modified; gradients flow back to it under a
          `GradientTape` that watches it.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 tensor.

        **Inside `tf.function`** (also with `jit_compile=True`): x may be
        symbolic (static shape), `seed` and `features` must be Python values.
        The model for each (seed, D, F) is made once and kept (16 of them), and
        TensorFlow lets a function create variables on its first trace only: a
        function works for the seeds and shapes it meets on its first call, and
        for any whose model an eager call made before. Any other raises a
        `ValueError` saying so.
        """
        return exercise(seed, x, features, self.mode)


nn_checkpoint_forward = KerasTensorFlow.exported()
