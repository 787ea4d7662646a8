"""The Flax NNX port: an `nnx.Module` MLP whose forward pass runs through `nnx.remat`.

NNX's own layout is kept: a module holds `linear1` and `linear2`, each an
`nnx.Linear` with `kernel` `(in, out)` (as Flax linen's `Dense`) and `bias`
`(out,)`. Its pure-dict form, `nnx.to_pure_dict(nnx.state(model))`, is
`{"linear1": {"kernel", "bias"}, "linear2": {...}}`; `params_to_pure`,
`pure_to_params`, `params_to_model` and `model_to_params` convert, with shape
asserts.

**The init is not NNX's.** `nnx.Linear(..., rngs=nnx.Rngs(seed))` draws the
same distributions as linen's `Dense`, but NNX derives its keys by splitting
an rng stream, while linen folds a hash of the scope name into `PRNGKey(seed)`.
So the same seed gives different parameters. The canonical ones come from
`jax_flax_init` (linen's init in `jax.random` alone) and are set into the
module. Imports jax, `flax.nnx`, numpy and the project's jax-only modules; it
never calls linen (though `flax.nnx` imports it internally).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from . import jax_flax_init
from .contract import Grads, Params
from .jax_flax_init import CompiledExercise
from .jax_port import JaxPort


class MLP(nnx.Module):
    """`nnx.Linear(D, F)` -> relu -> `nnx.Linear(F, F)`, run checkpointed or plain."""

    def __init__(self, dim: int, features: int, *, rngs: nnx.Rngs, checkpoint: bool = True):
        self.linear1 = nnx.Linear(dim, features, rngs=rngs)  # kernel (D, F), bias (F,)
        self.linear2 = nnx.Linear(features, features, rngs=rngs)  # kernel (F, F), bias (F,)
        # A plain Python attribute is static in NNX: it lives in the graphdef,
        # so jit compiles each path once and the same state runs either way.
        self.checkpoint = checkpoint

    def __call__(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        return self.checkpointed(x) if self.checkpoint else self.plain(x)

    def plain(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        x = self.linear1(x)  # (D,) -> (F,)
        x = jax.nn.relu(x)
        return self.linear2(x)  # (F,) -> (F,)

    # The decorator form, on the unbound method: `nnx.remat(model.plain)` raises
    # ValueError (bound methods are refused). The backward pass keeps this
    # region's inputs (parameters and x) and recomputes the hidden activation.
    @nnx.remat
    def checkpointed(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        return self.plain(x)


# ---------------------------------------------------------------------------
# Converters: canonical Params <-> NNX's pure dict <-> an MLP module
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def graphdef(dim: int, features: int, checkpoint: bool = True) -> nnx.GraphDef:
    """The MLP's static structure for D and F, built from shapes alone (no init runs)."""
    abstract = nnx.eval_shape(lambda: MLP(dim, features, rngs=nnx.Rngs(0), checkpoint=checkpoint))
    return nnx.graphdef(abstract)


def params_to_pure(params: Params) -> dict:
    """Canonical `Params` as NNX's pure dict: the layouts agree (kernel `(in, out)`)."""
    return from_canonical(params.w1, params.b1, params.w2, params.b2)


def from_canonical(w1: Any, b1: Any, w2: Any, b2: Any) -> dict:
    """NNX's pure dict from canonical-layout arrays (numpy, or jax, traced or not)."""
    assert w1.ndim == 2, w1.shape  # (D, F)
    features = w1.shape[1]
    assert w2.shape == (features, features), w2.shape
    assert b1.shape == b2.shape == (features,), (b1.shape, b2.shape)
    return {
        "linear1": {"kernel": w1, "bias": b1},  # (D, F), (F,)
        "linear2": {"kernel": w2, "bias": b2},  # (F, F), (F,)
    }


def pure_to_params(pure: dict) -> Params:
    """NNX's pure dict, or a gradient shaped like it, as canonical `Params`."""
    w1, b1 = (np.asarray(pure["linear1"][k]) for k in ("kernel", "bias"))
    w2, b2 = (np.asarray(pure["linear2"][k]) for k in ("kernel", "bias"))
    assert w1.ndim == 2, w1.shape  # (D, F)
    assert w2.shape == (w1.shape[1], w1.shape[1]), w2.shape  # (F, F)
    return Params(w1=w1, b1=b1, w2=w2, b2=b2)  # Params checks the biases' shapes


def merge(pure: dict, *, checkpoint: bool = True) -> MLP:
    """An MLP holding the pure dict's arrays as they are (jax arrays or tracers)."""
    dim, features = pure["linear1"]["kernel"].shape
    return nnx.merge(graphdef(dim, features, checkpoint), pure)


def params_to_model(params: Params, *, checkpoint: bool = True) -> MLP:
    """Canonical `Params` as an MLP module holding float32 jax arrays."""
    return merge(jax.tree.map(jnp.asarray, params_to_pure(params)), checkpoint=checkpoint)


def model_to_params(model: MLP) -> Params:
    """An MLP module as canonical `Params`."""
    return pure_to_params(nnx.to_pure_dict(nnx.state(model, nnx.Param)))


# ---------------------------------------------------------------------------
# The exercise
# ---------------------------------------------------------------------------


def nn_checkpoint_forward(seed: Any, x: Any, features: Any) -> jax.Array:
    """The exercise: the NNX MLP with linen's parameters for `PRNGKey(seed)`, under `nnx.remat`.

    **Arguments:**

    - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d
      array), at most `2**63 - 1`; `PRNGKey` keeps its low 32 bits (x32 mode).
    - `x`: a finite real vector of shape `(D,)`. A tracer is fine: its shape
      and dtype are checked, its values cannot be.
    - `features`: the width F, a positive integer-valued scalar.

    **Returns:** the `(F,)` float32 output. It works under `jax.grad` and
    `jax.vmap` (over x), and under `jax.jit` with `seed` and `features` static.
    """
    return _exercise(seed, x, features)


# Jitted over NNX's pure dict (plain nested dicts of arrays): the module is
# rebuilt inside the trace, so a warm call costs one dispatch and no graph
# traversal. Flax's init and the MLP compile together once per F (and D).
_exercise = CompiledExercise(lambda arrays, x: merge(from_canonical(*arrays), checkpoint=True)(x))


def _call(pure: dict, x: jax.Array, checkpoint: bool = True) -> jax.Array:
    return merge(pure, checkpoint=checkpoint)(x)


_apply = jax.jit(_call, static_argnames="checkpoint")


@functools.partial(jax.jit, static_argnames="checkpoint")
def _vjp(pure: dict, x: jax.Array, cotangent: jax.Array, *, checkpoint: bool):
    _, pull_back = jax.vjp(functools.partial(_call, checkpoint=checkpoint), pure, x)
    return pull_back(cotangent)


class FlaxNnx(JaxPort):
    """The Flax NNX port: `nnx.remat`, linen's init in pure JAX."""

    name = "flax_nnx"
    framework = "flax"
    distributions = ("jax", "jaxlib", "flax")

    # Flax's init, reproduced in jax.random (jax_flax_init), checked by the contract.
    init_params = staticmethod(jax_flax_init.init_params)

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        x = np.asarray(x, np.float32)
        return np.asarray(_apply(params_to_pure(params), x, checkpoint=checkpoint))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        x, cotangent = np.asarray(x, np.float32), np.asarray(cotangent, np.float32)
        grads, dx = _vjp(params_to_pure(params), x, cotangent, checkpoint=checkpoint)
        return Grads.of(pure_to_params(grads), np.asarray(dx))

    def differentiable(self, params: Params, x: np.ndarray, checkpoint: bool):
        pure = jax.tree.map(jnp.asarray, params_to_pure(params))
        return functools.partial(_call, checkpoint=checkpoint), (pure, jnp.asarray(x, jnp.float32))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        return nn_checkpoint_forward(seed, x, features)
