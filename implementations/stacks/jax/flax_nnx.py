"""The Flax NNX port: an `nnx.Module` MLP whose forward pass runs through `nnx.remat`.

NNX's own layout is kept: a module holds `linear1` and `linear2`, each an
`nnx.Linear` with `kernel` `(in, out)` (as linen's `Dense`) and `bias`
`(out,)`. The port's parameters are NNX's pure dict,
`nnx.to_pure_dict(nnx.state(model))`: `{"linear1": {"kernel", "bias"},
"linear2": {...}}`, merged into a module inside the trace.

**The init is not NNX's.** `nnx.Linear(..., rngs=nnx.Rngs(seed))` draws the
same distributions as linen's `Dense`, but NNX derives its keys by splitting
an rng stream, while linen folds a hash of the scope name into
`PRNGKey(seed)`. So the same seed gives different parameters. The canonical
ones are linen's, reproduced with `jax.random` (`JaxPort.init_params`). Never
calls linen (though `flax.nnx` imports it internally).
"""

from __future__ import annotations

import functools

import jax
from flax import nnx

from implementations.composition import Nesting, case_of
from implementations.policies import FULL, Policy, as_policy
from implementations.stacks.jax import JaxPort
from implementations.stacks.jax.flax_nnx_stateful import NnxStatefulBlock
from implementations.stacks.jax.layers import TwoLayers
from implementations.stacks.jax.policies import front, policy_function


class MLP(nnx.Module, TwoLayers):
    """`nnx.Linear(D, F)` -> relu -> `nnx.Linear(F, F)`, run checkpointed or plain."""

    def __init__(self, dim: int, features: int, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(dim, features, rngs=rngs)  # kernel (D, F), bias (F,)
        self.linear2 = nnx.Linear(features, features, rngs=rngs)  # kernel (F, F), bias (F,)

    # The decorator form, on the unbound method: `nnx.remat(model.plain)` raises
    # ValueError (bound methods are refused). The backward pass keeps this
    # region's inputs (parameters and x) and recomputes the hidden activation.
    @nnx.remat
    def checkpointed(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        return self.plain(x)


# Composition `twice` (property (k)): the remat'ed method wrapped again, called as
# `(model, x)`.
twice_checkpointed = nnx.remat(MLP.checkpointed)


@functools.lru_cache(maxsize=32)
def policy_call(policy: Policy):
    """`nnx.remat(MLP.plain, policy=...)`, called as `(model, x)`, for a policy other than
    none and full."""
    return nnx.remat(MLP.plain, policy=policy_function(policy))


@functools.lru_cache(maxsize=256)
def graphdef(dim: int, features: int) -> nnx.GraphDef:
    """The MLP's static structure for D and F, built from shapes alone (no init runs)."""
    return nnx.graphdef(nnx.eval_shape(lambda: MLP(dim, features, rngs=nnx.Rngs(0))))


def merge(pure: dict) -> MLP:
    """An MLP holding the pure dict's arrays as they are (numpy, jax arrays or tracers)."""
    return nnx.merge(graphdef(*pure["linear1"]["kernel"].shape), pure)


class FlaxNnx(NnxStatefulBlock, JaxPort):
    """The Flax NNX port: `nnx.remat`, linen's init in pure JAX."""

    name = "flax_nnx"
    checkpoint_api = "nnx.remat"
    framework = "flax"
    policies, inexpressible, compositions = front(
        "model.plain (no nnx.remat)",
        "nnx.remat",
        "nnx.remat(MLP.plain, policy=...)",
        twice="nnx.remat(nnx.remat(MLP.plain))",
        trained="a model whose call is nnx.remat'ed",
    )

    def to_native(self, w1, b1, w2, b2) -> dict:
        features = w1.shape[1]  # (D, F): NNX's kernel is (in, out), as the canonical one
        assert w2.shape == (features, features), w2.shape
        assert b1.shape == b2.shape == (features,), (b1.shape, b2.shape)
        return {"linear1": {"kernel": w1, "bias": b1}, "linear2": {"kernel": w2, "bias": b2}}

    def to_canonical(self, pure: dict) -> tuple:
        layer1, layer2 = pure["linear1"], pure["linear2"]
        return layer1["kernel"], layer1["bias"], layer2["kernel"], layer2["bias"]

    def apply(self, pure: dict, x: jax.Array, checkpoint: Policy | Nesting) -> jax.Array:
        if case_of(checkpoint) == "twice":
            return twice_checkpointed(merge(pure), x)
        model, policy = merge(pure), as_policy(checkpoint)
        if policy == FULL or not policy:
            return model.checkpointed(x) if policy else model.plain(x)
        return policy_call(policy)(model, x)


nn_checkpoint_forward = FlaxNnx.exported()
