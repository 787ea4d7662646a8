"""The exercise's model in Keras 3, the same code on every backend.

Import it after `backend.load(...)`: it imports Keras, which picks its
backend at that moment. Imports Keras, numpy and the contract only.

**The region.** `keras.RematScope(mode="full")` is read when a layer is
*made*: every layer made inside the scope runs its `call` through
`keras.remat`, which is `jax.checkpoint` on JAX,
`torch.utils.checkpoint.checkpoint(..., use_reentrant=False)` on torch and
`tf.recompute_grad` on TensorFlow. `MLP` is made inside the scope, so its
call is one region around the whole block, as Flax's `nn.checkpoint(MLP)`.
Its two `Dense` layers are made under `RematScope(mode=None)`: under "full"
each would otherwise get a region of its own, nested in the MLP's.

**Layout.** A Keras `Dense.kernel` is `(in, out)`, the canonical (Flax)
layout, so the converters only order and check: `trainable_variables` is
`[dense_0.kernel (D, F), dense_0.bias (F,), dense_1.kernel (F, F), dense_1.bias (F,)]`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
from keras import layers, ops

from ...contract import Params, check_features, check_seed, check_sizes, check_x_spec


class MLP(layers.Layer):
    """`Dense(F, relu)` -> `Dense(F)` on a `(D,)` x, giving `(F,)`.

    **Arguments:**

    - `features`: the width F.
    - `weights`: the initial `[dense_0.kernel, dense_0.bias, dense_1.kernel,
      dense_1.bias]` (numpy, the layout of `params_to_weights`), or None for
      Keras's own init (glorot-uniform kernels, zero biases).

    Every layer is float32, whatever the global dtype policy says (a
    `mixed_bfloat16` policy would otherwise compute in bfloat16).
    """

    def __init__(self, features: int, weights: Sequence[np.ndarray] | None = None, **kwargs):
        super().__init__(dtype="float32", **kwargs)  # reads the RematScope in force
        init = {}
        if weights is not None:
            # The values themselves as initializers: no random draw to overwrite
            # (Keras's glorot draw costs 10 ms at 256 x 256 on torch).
            w1, b1, w2, b2 = (_Given(w) for w in weights)
            init = {"dense_0": dict(kernel_initializer=w1, bias_initializer=b1)}
            init["dense_1"] = dict(kernel_initializer=w2, bias_initializer=b2)
        with keras.RematScope(mode=None):  # no regions of their own inside the MLP's
            self.dense_0 = layers.Dense(
                features, activation="relu", dtype="float32", **init.get("dense_0", {})
            )
            self.dense_1 = layers.Dense(features, dtype="float32", **init.get("dense_1", {}))

    def build(self, input_shape: tuple[int, ...]) -> None:  # (D,)
        self.dense_0.build((1, input_shape[-1]))  # Dense wants a batch axis: (1, D)
        self.dense_1.build((1, self.dense_0.units))

    def call(self, x: Any) -> Any:  # (D,) -> (F,)
        h = self.dense_0(ops.expand_dims(x, 0))  # (1, D) @ (D, F) -> (1, F), relu
        return ops.reshape(self.dense_1(h), (-1,))  # (1, F) @ (F, F) -> (F,)


class Nested(layers.Layer):
    """The MLP's region composed (`implementations.composition`), with Keras's own API:

    - `twice`: the MLP's call (its `RematScope("full")` region) wrapped again in
      `keras.remat`, this layer itself made under `RematScope(mode=None)`;
    - `under_trainer`: this layer made under `RematScope(mode="full")`, so that Keras remats
      its call, the whole model call, around the MLP's own region, as a trainer's outer
      region wraps a model that remats its block.

    Its variables are the MLP's, in the same order. `context_fn` (torch's checkpoint
    argument, for its instrument) goes to both regions; a backend's subclass may run the
    inner call otherwise (`inner_call`).
    """

    def __init__(self, inner: MLP, case: str, **kwargs):
        super().__init__(dtype="float32", **kwargs)  # reads the RematScope in force
        self.inner, self.case = inner, case

    def build(self, input_shape: tuple[int, ...]) -> None:  # (D,)
        if not self.inner.built:
            self.inner.build(input_shape)

    def inner_call(self, x: Any) -> Any:
        """The MLP's call, its own region inside."""
        return self.inner(x)

    def call(self, x: Any, context_fn: Any = None) -> Any:  # (D,) -> (F,)
        if self.case == "twice":
            extra = {} if context_fn is None else {"context_fn": context_fn}
            return keras.remat(self.inner_call)(x, **extra)
        return self.inner_call(x)


#: `Nested`'s RematScope mode, per composition case.
NESTED_MODE = {"twice": None, "under_trainer": "full"}


class _Given:
    """A Keras initializer that returns one given array, after checking the shape asked for."""

    def __init__(self, value: np.ndarray):
        self.value = value

    def __call__(self, shape, dtype=None):
        assert tuple(shape) == self.value.shape, (tuple(shape), self.value.shape)
        return ops.convert_to_tensor(self.value, dtype="float32")


# ---------------------------------------------------------------------------
# Layout converters: canonical (in, out) kernels = Keras Dense.kernel (in, out)
# ---------------------------------------------------------------------------


def params_to_weights(params: Params) -> list[np.ndarray]:
    """Canonical params in `MLP.trainable_variables` order; the layouts agree."""
    dim, features = params.dim, params.features
    weights = [np.array(params.w1), np.array(params.b1), np.array(params.w2), np.array(params.b2)]
    assert weights[0].shape == (dim, features), weights[0].shape  # dense_0.kernel (D, F)
    assert weights[2].shape == (features, features), weights[2].shape  # dense_1.kernel (F, F)
    assert weights[1].shape == weights[3].shape == (features,)  # the biases (F,)
    return weights


def weights_to_params(weights: Sequence[Any]) -> Params:
    """`[dense_0.kernel, dense_0.bias, dense_1.kernel, dense_1.bias]` (variables, the
    backend's arrays, or gradients shaped like them) as canonical params."""
    w1, b1, w2, b2 = (to_numpy(w) for w in weights)
    if w1.ndim != 2:
        raise ValueError(f"dense_0.kernel must be 2-D (D, F), got shape {w1.shape}")
    return Params(w1=w1, b1=b1, w2=w2, b2=b2)  # checks every shape against w1's (D, F)


# `keras.RematScope`'s mode for the checkpointed MLP; None for the plain one.
FULL = "full"


def skeleton(
    dim: int,
    features: int,
    *,
    mode: str | None = FULL,
    cls: type[MLP] = MLP,
    weights: Sequence[np.ndarray] | None = None,
    nesting: str = "once",
    nested: type[Nested] = Nested,
) -> MLP | Nested:
    """A built `MLP` (or subclass), made under `RematScope(mode=mode)`, holding `weights`
    (Keras's own init when None); for a nested composition case, inside a `nested` layer
    (`Nested`) that composes its region."""
    with keras.RematScope(mode=mode):
        model = cls(features, weights)
    model.build((dim,))
    if nesting == "once":
        return model
    with keras.RematScope(mode=NESTED_MODE[nesting]):
        outer = nested(model, nesting)
    outer.build((dim,))
    return outer


def to_numpy(array: Any) -> np.ndarray:
    """A backend array, variable or tensor as numpy.

    On TensorFlow through `.numpy()`: Keras's `convert_to_numpy` calls
    `np.array(x)`, and numpy 2 warns (DeprecationWarning) that TensorFlow's
    `__array__` takes no `copy` argument.
    """
    if keras.backend.backend() == "tensorflow":
        return np.asarray(ops.convert_to_tensor(array).numpy())
    return ops.convert_to_numpy(array)


def build(params: Params, *, mode: str | None = FULL, cls: type[MLP] = MLP) -> MLP:
    """A new built `MLP` (or subclass) holding `params`, made under `RematScope(mode=mode)`."""
    weights = params_to_weights(params)
    return skeleton(params.dim, params.features, mode=mode, cls=cls, weights=weights)


def reuse(
    params: Params,
    *,
    mode: str | None = FULL,
    cls: type[MLP] = MLP,
    nesting: str = "once",
    nested: type[Nested] = Nested,
) -> MLP | Nested:
    """A kept model of `params`' shapes, its weights set to `params` now.

    Only for work that is finished when the call returns (the contract's
    `forward`, `vjp` and records): the next call sets other weights, and a
    checkpoint reruns its region from the weights the model holds *then*.
    Making a Keras model costs milliseconds (each layer inspects signatures).
    """
    kept = _kept(params.dim, params.features, mode, cls, nesting, nested)
    return _load(kept, params)


@functools.lru_cache(maxsize=32)
def _kept(
    dim: int, features: int, mode: str | None, cls: type[MLP], nesting: str, nested: type
) -> MLP | Nested:
    return skeleton(dim, features, mode=mode, cls=cls, nesting=nesting, nested=nested)


def _load(model: MLP | Nested, params: Params) -> MLP | Nested:
    for variable, value in zip(model.trainable_variables, params_to_weights(params), strict=True):
        assert tuple(variable.shape) == value.shape, (variable.path, variable.shape, value.shape)
        variable.assign(value)
    return model


def model_params(model: MLP) -> Params:
    """The parameters a built `MLP` holds, canonical layout."""
    return weights_to_params([v.value for v in model.trainable_variables])


# ---------------------------------------------------------------------------
# The exercise on a KerasTensor
# ---------------------------------------------------------------------------


def symbolic_exercise(seed: Any, x: keras.KerasTensor, features: Any, params) -> Any:
    """`nn_checkpoint_forward` on a symbolic `KerasTensor` x of shape `(D,)`.

    **Arguments:** as the exercise's, and `params(seed, D, F) -> Params`.

    **Returns:** the `(F,)` `KerasTensor` of the checkpointed MLP holding
    the canonical parameters: `keras.Model(x, y)` runs it on any backend.
    """
    seed, features = check_seed(seed), check_features(features)
    if any(d is None for d in x.shape):
        raise ValueError(f"x must have a static shape (D,), got {x.shape}")
    dim = check_x_spec(tuple(x.shape), x.dtype)
    check_sizes(dim, features)
    model = build(params(seed, dim, features))
    return model(ops.cast(x, "float32"))


def is_symbolic(x: Any) -> bool:
    return isinstance(x, keras.KerasTensor)


def unwrap(x: Any) -> Any:
    """A `keras.Variable` x as the backend's own array or variable; anything else as is."""
    return x.value if isinstance(x, keras.Variable) else x
