"""Observe a Keras port on one backend, in a process of its own: `python -m
tests.support.keras_probe jax`.

Keras keeps the backend it was first imported with, and pytest-xdist runs
many test files in one process, so `tests/keras/test_keras.py` runs this once per
backend and judges what it prints: one JSON object of observations, made
with Keras and the backend only. No expected value is computed here.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

import implementations
from implementations.contract import Params, StackUnavailable
from tests.support import keras_own_call_probe

D, F, SEED = 3, 4, 7
X = np.array([0.5, -1.25, 2.0], np.float32)
OTHER = {"jax": "torch", "torch": "tensorflow", "tensorflow": "jax"}


def any_bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """float32 arrays of arbitrary bit patterns (NaN payloads, inf, -0, subnormals)."""
    return rng.integers(0, 2**32, size=shape, dtype=np.uint32).view(np.float32)


def bits(array: Any) -> list[int]:
    return np.asarray(array, np.float32).view(np.uint32).ravel().tolist()


def main(backend: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    port = implementations.load(f"keras_{backend}")
    from implementations.stacks.keras import backend as keras_backend
    from implementations.stacks.keras import model

    keras = keras_backend.load(backend)
    seen["backend"] = keras.backend.backend()

    # Converters: any bits into the Keras variables and back, and the layout.
    rng = np.random.default_rng(0)
    raw = Params(*(any_bits(rng, shape) for shape in ((D, F), (F,), (F, F), (F,))))
    mlp = model.build(raw)
    back = model.model_params(mlp)
    names = ("w1", "b1", "w2", "b2")
    seen["round_trip"] = [bits(getattr(back, n)) == bits(getattr(raw, n)) for n in names]
    seen["kernel_shapes"] = [tuple(mlp.dense_0.kernel.shape), tuple(mlp.dense_1.kernel.shape)]

    # The exercise on the backend's own arrays, a keras.Variable and a KerasTensor.
    native = port.from_numpy(X)
    out = port.nn_checkpoint_forward(SEED, native, F)
    seen["out_type"] = type(out).__module__.split(".")[0]
    seen["out"] = port.to_numpy(out).tolist()
    seen["out_dtype_shape"] = [str(port.to_numpy(out).dtype), list(port.to_numpy(out).shape)]
    via_variable = port.nn_checkpoint_forward(SEED, keras.Variable(X), F)
    seen["variable_same"] = bits(port.to_numpy(via_variable)) == bits(seen["out"])
    symbolic_x = keras.Input(batch_shape=(D,))
    symbolic_y = port.nn_checkpoint_forward(SEED, symbolic_x, F)
    seen["symbolic_shape"] = list(symbolic_y.shape)
    functional = keras.Model(symbolic_x, symbolic_y)
    seen["functional_out"] = port.to_numpy(functional(native)).tolist()

    # Count how often the MLP's Python call runs in one forward and backward.
    calls = {"n": 0}

    class Counted(model.MLP):
        def call(self, x, **kwargs):
            calls["n"] += 1
            return super().call(x)

    seen.update(BACKENDS[backend](port, keras, model, Counted, calls))
    seen["one_path"] = keras_own_call_probe.observe(backend)  # the evidence of the own call

    # The backend is this process's: the other Keras ports are unavailable, naming both.
    other = f"keras_{OTHER[backend]}"
    try:
        implementations.load(other)
    except implementations.PortUnavailable as error:
        seen["other_port"] = {"missing": error.missing, "reason": error.reason}
    try:
        keras_backend.load(OTHER[backend])
    except StackUnavailable as error:
        seen["other_load"] = str(error)
    return seen


def _jax(port, keras, model, counted, calls) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    from tests.support.helpers import remat_equations

    seen: dict[str, Any] = {"remat_equations": {}}
    weights = model.params_to_weights(model.model_params(model.build(_params())))
    for mode in ("full", None):
        mlp = model.skeleton(D, F, mode=mode)

        def loss(ws, x, mlp=mlp):
            return jnp.sum(mlp.stateless_call(list(ws), [], x)[0])

        jaxpr = jax.make_jaxpr(jax.grad(loss, argnums=(0, 1)))(weights, X)
        seen["remat_equations"][str(mode)] = len(remat_equations(jaxpr.jaxpr))
    f = lambda x: port.nn_checkpoint_forward(SEED, x, F)  # noqa: E731
    seen["dx"] = np.asarray(jax.grad(lambda x: jnp.sum(f(x)))(jnp.asarray(X))).tolist()
    seen["jit_same"] = bits(jax.jit(f)(X)) == bits(port.to_numpy(f(X)))
    seen["vmap_shape"] = list(jax.vmap(f)(jnp.stack([X, X])).shape)
    # A new seed runs the executable compiled already.
    before = port.compiled.forward._cache_size()
    port.nn_checkpoint_forward(SEED + 1, X, F)
    seen["new_seed_compiles"] = port.compiled.forward._cache_size() - before
    # A stateless call under remat: JAX traces the region, so the weights passed in count.
    seen["stateless"] = _stateless_grads_jax(model)
    return seen


def _stateless_grads_jax(model) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    mlp = model.skeleton(D, F)  # Keras's own random weights, never read
    weights = model.params_to_weights(_params())
    grads = jax.grad(lambda ws: jnp.sum(mlp.stateless_call(list(ws), [], X)[0]))(weights)
    return {"w2_grad": np.asarray(grads[2]).tolist()}


def _torch(port, keras, model, counted, calls) -> dict[str, Any]:
    import torch

    seen: dict[str, Any] = {"calls": {}}
    for mode in ("full", None):
        mlp = model.build(_params(), mode=mode, cls=counted)
        calls["n"] = 0
        x = torch.tensor(X, requires_grad=True)
        torch.autograd.grad(mlp(x).sum(), x)
        seen["calls"][str(mode)] = calls["n"]
    x = torch.tensor(X, requires_grad=True)
    (dx,) = torch.autograd.grad(port.nn_checkpoint_forward(SEED, x, F).sum(), x)
    seen["dx"] = dx.tolist()
    seen["x_unchanged"] = bits(x.detach()) == bits(X)
    # A stateless call under remat: torch reruns the region in the backward
    # pass, outside Keras's stateless scope, from the model's own weights.
    mlp = model.skeleton(D, F)  # Keras's own random weights
    weights = [torch.tensor(w, requires_grad=True) for w in model.params_to_weights(_params())]
    out, _ = mlp.stateless_call(weights, [], torch.tensor(X))
    seen["stateless"] = {"w2_grad": torch.autograd.grad(out.sum(), weights)[2].tolist()}
    # Keyword arguments reach a layer's call under RematScope (keras issue 21861).

    class Scaled(keras.layers.Layer):
        def call(self, x, scale=1.0):
            return x * scale

    with keras.RematScope(mode="full"):
        scaled = Scaled()
    x = torch.ones(2, requires_grad=True)
    seen["kwarg_reaches_call"] = scaled(x, scale=3.0).tolist()
    return seen


def _tensorflow(port, keras, model, counted, calls) -> dict[str, Any]:
    import tensorflow as tf

    from implementations.stacks.keras import keras_tensorflow

    seen: dict[str, Any] = {"calls": {}}
    for mode in ("full", None):
        mlp = model.build(_params(), mode=mode, cls=counted)
        calls["n"] = 0
        x = tf.constant(X)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = mlp(x)
        tape.gradient(y, x)
        seen["calls"][str(mode)] = calls["n"]
    x = tf.Variable(X)
    with tf.GradientTape() as tape:
        y = port.nn_checkpoint_forward(SEED, x, F)
    seen["dx"] = tape.gradient(y, x, output_gradients=tf.ones(F)).numpy().tolist()
    seen["x_unchanged"] = bits(x.numpy()) == bits(X)
    # A stateless call under remat: recompute_grad reruns the region from the variables.
    mlp = model.skeleton(D, F)
    weights = [tf.constant(w) for w in model.params_to_weights(_params())]
    with tf.GradientTape() as tape:
        tape.watch(weights)
        out, _ = mlp.stateless_call(weights, [], tf.constant(X))
    grad = tape.gradient(out, weights)[2]
    seen["stateless"] = {"w2_grad": None if grad is None else grad.numpy().tolist()}
    # Inside tf.function: the first trace may make the model; a later one may not.
    for jit in (False, True):

        @tf.function(jit_compile=jit)
        def run(x, seed):
            return keras_tensorflow.nn_checkpoint_forward(seed, x, F)

        first = run(tf.constant(X), SEED + 10 + jit)  # a seed no call has met
        eager = keras_tensorflow.nn_checkpoint_forward(SEED + 10 + jit, X, F).numpy()
        seen[f"function_jit_{jit}_same"] = bits(first.numpy()) == bits(eager)
        seen[f"function_jit_{jit}_error"] = np.abs(first.numpy() - eager).tolist()
        try:
            run(tf.constant(X), SEED + 20 + jit)  # a new seed: a second trace
        except ValueError as error:
            seen[f"function_jit_{jit}_new_seed"] = str(error)
        keras_tensorflow.nn_checkpoint_forward(SEED + 30, X, F)  # made eagerly first
        seen[f"function_jit_{jit}_warmed"] = run(tf.constant(X), SEED + 30).shape.as_list()
    return seen


def _params() -> Params:
    rng = np.random.default_rng(1)
    return Params(
        rng.normal(size=(D, F)), rng.normal(size=F), rng.normal(size=(F, F)), rng.normal(size=F)
    )


BACKENDS = {"jax": _jax, "torch": _torch, "tensorflow": _tensorflow}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
