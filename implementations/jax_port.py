"""What every JAX port shares: array conversion, precision pinning, and the evidence records.

A JAX port subclasses `JaxPort` instead of `Implementation` and writes one
method for the evidence, `differentiable(params, x, checkpoint) -> (fn, args)`:
the function its `vjp` differentiates and its `(parameters, x)` arguments.
`JaxPort` reads both records with `jax_evidence`, whose jaxprs depend on
shapes and dtypes only, so it keeps one record per shape, as jit keeps one
executable per shape. Imports jax only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import jax_evidence
from .contract import BackwardRecord, Implementation, Params, check_features


class JaxPort(Implementation):
    """An `Implementation` on JAX arrays: subclasses add the model, init and `differentiable`."""

    def differentiable(
        self, params: Params, x: np.ndarray, checkpoint: bool
    ) -> tuple[Callable, tuple]:
        """The function `vjp` differentiates, and its `(parameters, x)` arguments as jax arrays."""
        raise NotImplementedError(f"{type(self).__name__} must define differentiable()")

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        def make() -> BackwardRecord:
            fn, args = self.differentiable(params, x, checkpoint)
            ones = jnp.ones((params.features,), jnp.float32)
            return jax_evidence.backward_record(
                fn, args, origins=("parameter", "input"), cotangent=ones
            )

        return self._cached(("vjp", params.dim, params.features, checkpoint), make)

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        features = check_features(features)

        def make() -> BackwardRecord:
            return jax_evidence.backward_record(
                lambda x: self.nn_checkpoint_forward(seed, x, features),
                (jnp.asarray(x, jnp.float32),),
                origins=("input",),
                cotangent=jnp.ones((features,), jnp.float32),
            )

        return self._cached(("exercise", np.shape(x), features), make)

    def _cached(self, key: Any, make: Callable[[], BackwardRecord]) -> BackwardRecord:
        records = self.__dict__.setdefault("_records", {})
        if key not in records:
            records[key] = make()
        return records[key]

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def from_numpy(self, array: np.ndarray) -> jax.Array:
        return jnp.asarray(array)

    def pin_matmul_precision(self) -> None:
        jax.config.update("jax_default_matmul_precision", "highest")
