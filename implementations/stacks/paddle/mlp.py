"""The Paddle MLP, its parameters from canonical ones and back, and the exercise's model.

Imports paddle and numpy. Paddle's `Linear.weight` is `(in, out)`, the
canonical kernel's own layout: no transpose, only copies and shape checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...contract import Grads, Params, check_exercise
from ..numpy import canonical_params
from ..pool import ModelPool
from .arrays import as_input, to_host_array
from .loaded import paddle

# Through `loaded`: Paddle is imported only where it can load (never after TensorFlow).
recompute = paddle.distributed.fleet.utils.recompute

# The MLP's parameter names (`named_parameters()`), in the canonical order w1, b1, w2, b2.
STATE_NAMES = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


def _linear(weight: np.ndarray, bias: np.ndarray) -> paddle.nn.Linear:
    """A `Linear` holding copies of `weight` `(in, out)` and `bias` `(out,)`.

    Made zero (`Constant(0.0)`), then given the arrays by `set_value`, a copy:
    Paddle's default initializer would draw from its global generator
    (advancing the caller's stream) only to be overwritten, and its `Assign`
    initializer turns the array into a Python list of floats first (10 ms of
    CPU at 256x256).
    """
    assert bias.shape == (weight.shape[1],), (bias.shape, weight.shape)
    zero = paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.0))
    linear = paddle.nn.Linear(*weight.shape, weight_attr=zero, bias_attr=zero)
    linear.weight.set_value(np.array(weight, np.float32))
    linear.bias.set_value(np.array(bias, np.float32))
    return linear


class MLP(paddle.nn.Layer):
    """`Linear(D, F)` -> `ReLU` -> `Linear(F, F)`, its forward pass under Paddle's `recompute`.

    **Arguments:** `params` (canonical), and `checkpoint`: whether a forward
    pass that needs grad goes through
    `paddle.distributed.fleet.utils.recompute(block, x)` (reentrant, the
    default: the non-reentrant variant takes the one pair of saved-tensor
    hooks Paddle allows, which the evidence needs). `nesting` (set per call, a
    composition case of `implementations.composition`): `once`, the block in one recompute;
    `twice`, `recompute(lambda y: recompute(block, y), x)`; `under_trainer`, the layer's whole
    call in an outer recompute, as a trainer's recompute wraps a model that recomputes its
    own block.
    """

    def __init__(self, params: Params, *, checkpoint: bool = True):
        super().__init__()
        self.fc1 = _linear(params.w1, params.b1)
        self.relu = paddle.nn.ReLU()
        self.fc2 = _linear(params.w2, params.b2)
        self.checkpoint = checkpoint
        self.nesting = "once"

    def block(self, x: paddle.Tensor) -> paddle.Tensor:  # (D,) -> (F,)
        return self.fc2(self.relu(self.fc1(x)))

    def needs_grad(self, x: paddle.Tensor) -> bool:
        if not paddle.is_grad_enabled():
            return False
        return not x.stop_gradient or any(not p.stop_gradient for p in self.parameters())

    def forward(self, x: paddle.Tensor) -> paddle.Tensor:  # (D,) -> (F,)
        if not (self.checkpoint and self.needs_grad(x)):
            return self.block(x)
        if self.nesting == "under_trainer":  # the trainer's region over the model's call
            return recompute(self.model_call, x)
        if self.nesting == "twice":  # the same region, wrapped again
            return recompute(lambda y: recompute(self.block, y), x)
        return recompute(self.block, x)

    def model_call(self, x: paddle.Tensor) -> paddle.Tensor:  # the model, its own region in
        return recompute(self.block, x)


class LayerPool(ModelPool):
    """MLP layers lent to the port's own calls (`lend(mlp, params, checkpoint=...)`):
    building one costs ~1.7 ms of CPU, more than its VJP on small shapes. A pooled layer
    gets the call's parameters by `set_value` (copies) and no gradient: `backward()`
    accumulates into `.grad`, so each is set to None (not zero: 0 + -0.0 is +0.0) when the
    layer is lent and when it comes back. `nn_checkpoint_forward` builds its own layer."""

    def assign(self, model: MLP, params: Params) -> None:
        named = dict(model.named_parameters())
        values = (params.w1, params.b1, params.w2, params.b2)
        for name, value in zip(STATE_NAMES, values, strict=True):
            named[name].set_value(np.array(value, np.float32))
        model.clear_gradients(set_to_zero=False)

    def release(self, model: MLP) -> None:
        model.clear_gradients(set_to_zero=False)


def state_to_params(model: MLP) -> Params:
    """The model's parameters as canonical params (same layout: copies, checked by `Params`)."""
    named = dict(model.named_parameters())
    return Params(*(to_host_array(named[name]) for name in STATE_NAMES))


def grads_of(model: MLP, x: paddle.Tensor) -> Grads:
    """The `.grad` of every parameter and of x, after a backward pass, as canonical `Grads`."""
    named = dict(model.named_parameters())
    arrays = [to_host_array(named[name].grad) for name in STATE_NAMES]
    return Grads(*arrays, x=to_host_array(x.grad))


def exercise_model(
    seed: Any, x: Any, features: Any, *, mlp: type[MLP] = MLP
) -> tuple[paddle.Tensor, MLP]:
    """The exercise's checked x and its model: Flax's canonical MLP for `PRNGKey(seed)`.

    Checks every argument first (the contract's errors, naming it). The
    parameters are made here and never returned, so only x can be
    differentiated: they are frozen (`stop_gradient`). `mlp` is the model class.
    """
    seed, x, features = check_exercise(seed, x, features, as_input)
    model = mlp(canonical_params(seed, x.shape[0], features))
    for parameter in model.parameters():
        parameter.stop_gradient = True
    return x, model
