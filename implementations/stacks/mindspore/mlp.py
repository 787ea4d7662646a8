"""The MindSpore MLP (PyNative mode), its parameters from canonical ones and back, and the
exercise's model. Imports mindspore and numpy.

Each layer is an `Affine` cell holding a kernel in the canonical `(in, out)`
layout (`x @ kernel + bias`), so no transpose is needed; `nn.Dense` keeps
`(out, in)`. The checkpoint is `Cell.recompute()` on the whole MLP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...contract import Params, check_exercise
from ..numpy import canonical_params
from ..pool import ModelPool
from .arrays import as_input, to_host_array
from .loaded import ms

# Through `loaded`: MindSpore is imported only where it can load (never after Paddle).
nn, ops = ms.nn, ms.ops

# The MLP's parameter names (`parameters_and_names()`), in the canonical order w1, b1, w2, b2.
STATE_NAMES = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


class Affine(nn.Cell):
    """`x @ weight + bias` with a given `(in, out)` weight and `(out,)` bias (copied)."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray, *, trainable: bool = True):
        super().__init__()
        assert bias.shape == (weight.shape[1],), (bias.shape, weight.shape)
        self.weight = ms.Parameter(_tensor(weight), name="weight", requires_grad=trainable)
        self.bias = ms.Parameter(_tensor(bias), name="bias", requires_grad=trainable)

    def construct(self, x):  # (in,) -> (out,); graph mode wants the first argument named self
        return ops.matmul(x, self.weight) + self.bias


def _tensor(array: np.ndarray) -> ms.Tensor:
    return ms.Tensor(np.array(array, np.float32, copy=True, order="C"))


class MLP(nn.Cell):
    """`Affine(D, F)` -> `ReLU` -> `Affine(F, F)`; `checkpoint` calls `Cell.recompute()` on it.

    `trainable=False` freezes the parameters (`requires_grad=False`).
    """

    def __init__(self, params: Params, *, checkpoint: bool = True, trainable: bool = True):
        super().__init__()
        self.fc1 = Affine(params.w1, params.b1, trainable=trainable)
        self.relu = nn.ReLU()
        self.fc2 = Affine(params.w2, params.b2, trainable=trainable)
        self.checkpoint = checkpoint
        if checkpoint:
            self.recompute()

    def construct(self, x):  # (D,) -> (F,)
        return self.fc2(self.relu(self.fc1(x)))


class Recomputed(nn.Cell):
    """An outer cell marked `recompute()` around `inner` (a cell that may recompute itself):
    the composition case `twice`'s second region, in MindSpore's own spelling."""

    def __init__(self, inner: nn.Cell):
        super().__init__(auto_prefix=False)  # the inner cell's parameters keep their names
        self.inner = inner
        self.recompute()

    def construct(self, x):
        return self.inner(x)


def composed(model: MLP, nesting: str) -> Any:
    """`model` (a recomputed MLP) as a composition case runs it (`implementations.composition`):
    `once`, the cell itself; `twice`, inside an outer cell marked `recompute()`;
    `under_trainer`, the cell's whole call under the functional `mindspore.recompute`, as a
    training loop's recompute wraps a model that recomputes its own cell."""
    if nesting == "twice":
        return Recomputed(model)
    if nesting == "under_trainer":
        return lambda x: ms.recompute(model, x)
    return model


class CellPool(ModelPool):
    """MLP cells lent to the port's own calls (`lend(mlp, params, checkpoint=...)`): building
    one (three cells, four parameters, `recompute()`) costs ~2.5 ms of CPU, more than its VJP.
    A pooled cell gets the call's parameters by `set_data` (copies); MindSpore's functional
    `vjp` keeps no gradient on the cell. `nn_checkpoint_forward` builds its own cell."""

    def assign(self, model: MLP, params: Params) -> None:
        for parameter, value in zip(parameters(model), _canonical_order(params), strict=True):
            parameter.set_data(_tensor(value))


def _canonical_order(params: Params) -> tuple[np.ndarray, ...]:
    return params.w1, params.b1, params.w2, params.b2


def parameters(model: MLP) -> list[ms.Parameter]:
    """The model's parameters in `STATE_NAMES` order."""
    named = dict(model.parameters_and_names())
    return [named[name] for name in STATE_NAMES]


def state_to_params(model: MLP) -> Params:
    """The model's parameters as canonical params (same layout: copies, checked by `Params`)."""
    return Params(*(to_host_array(p) for p in parameters(model)))


def exercise_model(
    seed: Any, x: Any, features: Any, *, mlp: type[MLP] = MLP
) -> tuple[ms.Tensor, MLP]:
    """The exercise's checked x and its model: Flax's canonical MLP for `PRNGKey(seed)`.

    Checks every argument first (the contract's errors, naming it). The
    parameters are made here and never returned, so only x can be
    differentiated: they are frozen. `mlp` is the model class.
    """
    seed, x, features = check_exercise(seed, x, features, as_input)
    return x, mlp(canonical_params(seed, x.shape[0], features), trainable=False)
