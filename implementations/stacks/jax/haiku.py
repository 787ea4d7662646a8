"""The Haiku port: `hk.remat` around the MLP module, inside `hk.transform`.

Haiku's layout is the canonical one but for its names: an `hk.Linear` holds
`w` `(in, out)` and `b` `(out,)`, and the layers of a module are named in the
order they are *created*, inside the module's name scope: `mlp/linear` (the
first layer), `mlp/linear_1` (the second). `to_native` and `to_canonical`
rename, with shape asserts. `hk.Linear`'s own init (a truncated normal
without Flax's variance correction, keys from Haiku's rng sequence) is not
Flax's, so the parameters are Flax's, reproduced with `jax.random`
(`JaxPort.init_params`). Never imports flax.
"""

from __future__ import annotations

import functools
from typing import Any

import haiku as hk
import jax

from implementations.composition import Nesting, case_of
from implementations.policies import FULL, Policy, as_policy
from implementations.stacks.jax import JaxPort
from implementations.stacks.jax.haiku_stateful import HaikuStatefulBlock
from implementations.stacks.jax.policies import front, policy_function, tag

# The MLP module's name scope and its layers' names, by creation order.
SCOPE = "mlp"
FIRST, SECOND = f"{SCOPE}/linear", f"{SCOPE}/linear_1"


class MLP(hk.Module):
    """`Linear(F)` -> relu -> `Linear(F)`, default Haiku names (`linear`, `linear_1`)."""

    def __init__(self, features: int, name: str = SCOPE):
        super().__init__(name=name)
        self.features = features

    def __call__(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        # Create both layers before calling either: Haiku names a module when
        # it is created, so `hk.Linear(F)(relu(hk.Linear(F)(x)))` would name
        # the *outer* (second) layer `linear`, as Python builds it first.
        first = hk.Linear(self.features)  # mlp/linear: w (D, F), b (F,)
        second = hk.Linear(self.features)  # mlp/linear_1: w (F, F), b (F,)
        return second(jax.nn.relu(tag(first(x))))  # h tagged for save_named


@functools.lru_cache(maxsize=256)
def transformed(features: int) -> hk.Transformed:
    """The MLP of width F as a pure `(init, apply)` pair; `apply(params, x, checkpoint)`.

    No rng: the block draws no random numbers (`hk.without_apply_rng`).
    """

    def forward(x: jax.Array, checkpoint: Policy | Nesting) -> jax.Array:  # (D,) -> (F,)
        mlp = MLP(features)
        # hk.remat is jax.checkpoint with Haiku's state (parameters, state, rng)
        # threaded through it; the backward pass keeps the region's inputs and
        # recomputes the hidden activation. It works only inside a transform.
        if case_of(checkpoint) == "twice":  # composition (property (k)): wrapped again
            return hk.remat(hk.remat(mlp))(x)
        if not checkpoint:
            return mlp(x)
        if checkpoint == FULL:
            return hk.remat(mlp)(x)
        return hk.remat(mlp, policy=policy_function(checkpoint))(x)

    return hk.without_apply_rng(hk.transform(forward))


class Haiku(HaikuStatefulBlock, JaxPort):
    """The Haiku port: `hk.remat` inside `hk.transform`, Flax's init in pure JAX."""

    name = "haiku"
    checkpoint_api = "hk.remat"
    framework = "dm-haiku"
    policies, inexpressible, compositions = front(
        "mlp (no hk.remat)",
        "hk.remat(mlp)",
        "hk.remat(mlp, policy=...)",
        twice="hk.remat(hk.remat(mlp))",
        trained="a transformed apply that runs hk.remat(mlp)",
    )

    def to_native(self, w1, b1, w2, b2) -> dict[str, dict[str, Any]]:
        features = w1.shape[1]  # w1 (D, F)
        assert w2.shape == (features, features), w2.shape
        assert b1.shape == b2.shape == (features,), (b1.shape, b2.shape)
        # The layouts agree (`w` is (in, out)); only the names change.
        return {FIRST: {"w": w1, "b": b1}, SECOND: {"w": w2, "b": b2}}  # (D, F) (F,) (F, F) (F,)

    def to_canonical(self, params: dict[str, dict[str, Any]]) -> tuple:
        first, second = params[FIRST], params[SECOND]
        features = first["w"].shape[1]  # (D, F)
        assert second["w"].shape == (features, features), second["w"].shape
        return first["w"], first["b"], second["w"], second["b"]

    def apply(self, params: dict[str, dict[str, Any]], x: jax.Array, checkpoint: Policy | Nesting):
        features = params[FIRST]["w"].shape[1]
        if case_of(checkpoint) != "twice":
            checkpoint = as_policy(checkpoint)
        return transformed(features).apply(params, x, checkpoint)  # (D,) -> (F,)


nn_checkpoint_forward = Haiku.exported()
