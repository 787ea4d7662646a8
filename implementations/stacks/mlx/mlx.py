"""The MLX port: `mlx.nn.utils.checkpoint` around a two-layer `nn.Module`, on MLX's CPU backend.

Its parameters are Flax's canonical ones, computed without JAX by the numpy
init (`implementations.stacks.numpy`). MLX's `nn.Linear.weight` is `(out, in)`, the
canonical kernel transposed; `params_to_arrays` and `arrays_to_params`
convert, with shape asserts. MLX is lazy: `nn_checkpoint_forward` returns an
unevaluated `mx.array`, and the evidence is read off the unevaluated graph of
`mx.vjp` (the MLX stack's `record`). Nothing is compiled (`mx.compile` is not used), so
no call ever recompiles. Imports mlx, numpy and the project's numpy-only
modules, never jax or torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from implementations.contract import (
    BackwardRecord,
    Grads,
    Params,
    check_features,
    check_seed,
    check_sizes,
)
from implementations.stacks import Port
from implementations.stacks.mlx import STACK, Tap, as_input, no_tap, to_host_array
from implementations.stacks.numpy import canonical_params, out_in

# The MLP's parameter names (`tree_flatten(model.parameters())`), canonical order w1, b1, w2, b2.
STATE_NAMES = out_in.NAMES  # `tree_flatten(model.parameters())`'s names, canonical order


class CanonicalLinear(nn.Linear):
    """An `nn.Linear` holding a given `(out, in)` weight and `(out,)` bias."""

    def __init__(self, weight: mx.array, bias: mx.array):
        # nn.Linear.__init__ would draw a uniform init from MLX's global
        # random key (advancing the caller's stream) only to be overwritten.
        nn.Module.__init__(self)
        assert bias.shape == (weight.shape[0],), (bias.shape, weight.shape)
        self.weight, self.bias = weight, bias


class MLP(nn.Module):
    """`Linear(D, F)` -> relu -> `Linear(F, F)`, through `nn.utils.checkpoint` when `checkpoint`.

    `tap` names the block's arrays for the evidence instrument (a no-op by default).
    """

    def __init__(
        self,
        fc1: nn.Linear,
        fc2: nn.Linear,
        *,
        checkpoint: bool = True,
        tap: Callable[[str, mx.array], mx.array] = no_tap,
    ):
        super().__init__()
        self.fc1, self.fc2 = fc1, fc2
        self.checkpoint, self.tap = checkpoint, tap

    def block(self, x: mx.array) -> mx.array:  # (D,) -> (F,)
        h = self.tap("fc1", self.fc1(x))  # (D,) -> (F,): addmm(b, x, W.T)
        a = self.tap("relu", nn.relu(h))
        return self.tap("fc2", self.fc2(a))  # (F,) -> (F,)

    def __call__(self, x: mx.array) -> mx.array:  # (D,) -> (F,)
        if not self.checkpoint:
            return self.block(x)
        # mx.checkpoint over the module's trainable parameters and x: the
        # backward pass keeps those and recomputes the block's activations.
        # `nn.utils.checkpoint(self)` would call __call__ again: pass the block.
        return nn.utils.checkpoint(self, self.block)(x)


# ---------------------------------------------------------------------------
# Layout converters: canonical kernel (in, out) <-> MLX weight (out, in)
# ---------------------------------------------------------------------------


def _array(array: np.ndarray) -> mx.array:
    return mx.array(np.ascontiguousarray(array, dtype=np.float32))  # a copy


def params_to_arrays(params: Params) -> dict[str, mx.array]:
    """Canonical params as the MLP's parameters: each `Linear.weight` is the kernel transposed."""
    return {name: _array(array) for name, array in out_in.from_params(params).items()}


def arrays_to_params(state: Mapping[str, mx.array]) -> Params:
    """The MLP's parameters (any mapping with its names) as canonical params."""
    return out_in.to_params(state, to_host_array)


def build_mlp(
    state: Mapping[str, mx.array],
    *,
    checkpoint: bool = True,
    tap: Callable[[str, mx.array], mx.array] = no_tap,
    mlp: type[MLP] = MLP,
) -> MLP:
    """An `mlp` (`MLP` by default) holding the given parameters (MLX layout, `STATE_NAMES`)."""
    fc1 = CanonicalLinear(state["fc1.weight"], state["fc1.bias"])
    fc2 = CanonicalLinear(state["fc2.weight"], state["fc2.bias"])
    return mlp(fc1, fc2, checkpoint=checkpoint, tap=tap)


def _call(checkpoint: bool, tap: Callable = no_tap, mlp: type[MLP] = MLP) -> Callable:
    """`run(fc1.weight, fc1.bias, fc2.weight, fc2.bias, x) -> (F,)`: the MLP as a function of
    its arrays, as `mx.vjp` differentiates it."""

    def run(*flat: mx.array) -> mx.array:
        *arrays, x = flat
        state = dict(zip(STATE_NAMES, arrays, strict=True))
        return build_mlp(state, checkpoint=checkpoint, tap=tap, mlp=mlp)(x)

    return run


# ---------------------------------------------------------------------------
# The exercise
# ---------------------------------------------------------------------------


def _exercise(
    seed: Any, x: Any, features: Any, tap: Callable = no_tap, mlp: type[MLP] = MLP
) -> mx.array:
    seed, features = check_seed(seed), check_features(features)
    x = as_input(x)
    check_sizes(x.shape[0], features)
    state = params_to_arrays(canonical_params(seed, x.shape[0], features))
    for name, array in state.items():
        tap(name, array)
    return build_mlp(state, tap=tap, mlp=mlp)(x)  # (D,) -> (F,)


# ---------------------------------------------------------------------------
# The port
# ---------------------------------------------------------------------------


class Mlx(Port):
    """The MLX port: `mlx.nn.utils.checkpoint` (`mx.checkpoint`) around an MLP, CPU backend."""

    name = "mlx"
    framework = "mlx"
    stack = STACK
    checkpoint_api = "mlx.nn.utils.checkpoint"
    policies: ClassVar[dict[str, str]] = {
        "none": "the plain module",
        "full": "mlx.nn.utils.checkpoint (mx.checkpoint)",
    }
    inexpressible: ClassVar[dict[str, str]] = {
        "save_dots": "mx.checkpoint takes no policy: it keeps the region's inputs only",
        "save_named": "no names: only the region's placement can change",
        "offload_dots": "MLX has unified memory and no offload",
        "budget": "mx.checkpoint has no memory budget",
    }
    #: The module class the port builds (mutants swap it).
    mlp: type[MLP] = MLP

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The numpy canonical init, loaded into the MLX module and exported
        # again, so that the layout converters are part of what is checked.
        params = canonical_params(seed, dim, features)
        model = build_mlp(params_to_arrays(params), mlp=self.mlp)
        return arrays_to_params(dict(nn.utils.tree_flatten(model.parameters())))

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        checkpoint = bool(self.policy(checkpoint))
        model = build_mlp(params_to_arrays(params), checkpoint=checkpoint, mlp=self.mlp)
        return to_host_array(model(as_input(x)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        run = _call(bool(self.policy(checkpoint)), mlp=self.mlp)
        primals = [*params_to_arrays(params).values(), as_input(x)]
        _, grads = mx.vjp(lambda *a: [run(*a)], primals, [_array(cotangent)])
        mx.eval(grads)
        return out_in.to_grads(grads[:-1], grads[-1], to_host_array)  # x is the last primal

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        tap = Tap()
        args = {**params_to_arrays(params), "x": as_input(x)}
        origins = dict.fromkeys(STATE_NAMES, "parameter") | {"x": "input"}
        ones = mx.ones((params.features,), mx.float32)
        run = _call(bool(self.policy(checkpoint)), tap, self.mlp)
        return self.stack.record(run, args, origins, ones, tap)

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        tap = Tap()
        features = check_features(features)
        ones = mx.ones((features,), mx.float32)
        return self.stack.record(
            lambda x: _exercise(seed, x, features, tap, self.mlp),
            {"x": as_input(x)},
            {"x": "input"},
            ones,
            tap,
        )

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> mx.array:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)`, applied to x through a
        checkpoint.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
        - `x`: a finite real vector of shape `(D,)`: an `mx.array`, a numpy array
          or a list. It is never modified. Under `mx.grad` and `mx.vjp` gradients
          flow back to it; under `mx.vmap` and `mx.compile` its values cannot be
          read, so only its shape and dtype are checked.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 output, an unevaluated (lazy) `mx.array`.
        """
        return _exercise(seed, x, features, mlp=self.mlp)


nn_checkpoint_forward = Mlx.exported()
