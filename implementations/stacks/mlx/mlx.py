"""The MLX port: `mlx.nn.utils.checkpoint` around a two-layer `nn.Module`, on MLX's CPU backend.

Its parameters are Flax's canonical ones, computed without JAX by the numpy
init (`implementations.stacks.numpy`). MLX's `nn.Linear.weight` is `(out, in)`, the
canonical kernel transposed; `params_to_arrays` and `arrays_to_params`
convert, with shape asserts. MLX is lazy: `nn_checkpoint_forward` returns an
unevaluated `mx.array`, and the evidence is read off the unevaluated graph of
`mx.vjp` of the port's own calls: `pullback` (what `vjp` evaluates) and
`nn_checkpoint_forward`. Nothing is compiled (`mx.compile` is not used), so no
call ever recompiles. Imports mlx, numpy and the project's numpy-only modules,
never jax or torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, NamedTuple

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from implementations.composition import wrapped
from implementations.contract import (
    BackwardRecord,
    Grads,
    Params,
    check_exercise,
    check_features,
)
from implementations.policies import whole_block
from implementations.stacks import Port
from implementations.stacks.base import observes
from implementations.stacks.mlx import STACK, Tap, as_input, no_tap, to_host_array
from implementations.stacks.mlx import stateful as block_with_state
from implementations.stacks.mlx.instrument import read
from implementations.stacks.numpy import canonical_params, out_in
from implementations.stateful_port import OffersStatefulBlock

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
    `nesting` is the composition case (`implementations.composition`): `once`, the block in
    one checkpoint; `twice`, that checkpoint inside another around the same block;
    `under_trainer`, the module's whole call inside an outer checkpoint, as a trainer's
    activation checkpointing wraps a model that checkpoints its own block.
    """

    def __init__(
        self,
        fc1: nn.Linear,
        fc2: nn.Linear,
        *,
        checkpoint: bool = True,
        tap: Callable[[str, mx.array], mx.array] = no_tap,
        nesting: str = "once",
    ):
        super().__init__()
        self.fc1, self.fc2 = fc1, fc2
        self.checkpoint, self.tap, self.nesting = checkpoint, tap, nesting

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
        if self.nesting == "under_trainer":  # the trainer's region over the model's call
            return nn.utils.checkpoint(self, self.model_call)(x)
        if self.nesting == "twice":  # the same region, wrapped again
            return nn.utils.checkpoint(self, nn.utils.checkpoint(self, self.block))(x)
        return self.model_call(x)

    def model_call(self, x: mx.array) -> mx.array:  # the model, its own region in
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
    nesting: str = "once",
) -> MLP:
    """An `mlp` (`MLP` by default) holding the given parameters (MLX layout, `STATE_NAMES`),
    its region composed as `nesting` says."""
    fc1 = CanonicalLinear(state["fc1.weight"], state["fc1.bias"])
    fc2 = CanonicalLinear(state["fc2.weight"], state["fc2.bias"])
    return mlp(fc1, fc2, checkpoint=checkpoint, tap=tap, nesting=nesting)


def _call(
    checkpoint: bool, tap: Callable = no_tap, mlp: type[MLP] = MLP, nesting: str = "once"
) -> Callable:
    """`run(fc1.weight, fc1.bias, fc2.weight, fc2.bias, x) -> (F,)`: the MLP as a function of
    its arrays, as `mx.vjp` differentiates it."""

    def run(*flat: mx.array) -> mx.array:
        *arrays, x = flat
        state = dict(zip(STATE_NAMES, arrays, strict=True))
        return build_mlp(state, checkpoint=checkpoint, tap=tap, mlp=mlp, nesting=nesting)(x)

    return run


# ---------------------------------------------------------------------------
# The exercise
# ---------------------------------------------------------------------------


#: The `Tap` of the exercise record observing the current call, if any (innermost last).
_TAPS: list[Tap] = []


@contextlib.contextmanager
def tapping(tap: Tap) -> Iterator[Tap]:
    """While on, the port's own `nn_checkpoint_forward` names its arrays in `tap`, so that the
    record observing it can give their shapes and roles (the export has none)."""
    _TAPS.append(tap)
    try:
        yield tap
    finally:
        _TAPS.pop()


def active_tap() -> Callable[[str, mx.array], mx.array]:
    """The tap of the record observing the current call, or `no_tap`."""
    return _TAPS[-1] if _TAPS else no_tap


class Pullback(NamedTuple):
    """An `mx.vjp` of the MLP, unevaluated: its output, one gradient per primal (in order), the
    primals by name (`STATE_NAMES` then x) and the cotangent, both evaluated before it ran."""

    output: mx.array
    grads: list[mx.array]
    primals: dict[str, mx.array]
    cotangent: mx.array


def _exercise(
    seed: Any, x: Any, features: Any, tap: Callable = no_tap, mlp: type[MLP] = MLP
) -> mx.array:
    seed, x, features = check_exercise(seed, x, features, as_input)
    state = params_to_arrays(canonical_params(seed, x.shape[0], features))
    for name, array in state.items():
        tap(name, array)
    return build_mlp(state, tap=tap, mlp=mlp)(x)  # (D,) -> (F,)


# ---------------------------------------------------------------------------
# The port
# ---------------------------------------------------------------------------


class Mlx(OffersStatefulBlock, Port):
    """The MLX port: `mlx.nn.utils.checkpoint` (`mx.checkpoint`) around an MLP, CPU backend."""

    name = "mlx"
    framework = "mlx"
    stack = STACK
    checkpoint_api = "mlx.nn.utils.checkpoint"
    policies, inexpressible = whole_block(
        "mx.checkpoint",
        "the plain module",
        "mlx.nn.utils.checkpoint (mx.checkpoint)",
        keeps="it keeps the region's inputs only",
        save_named="no names: only the region's placement can change",
        offload_dots="MLX has unified memory and no offload",
    )
    compositions = wrapped("nn.utils.checkpoint(module, {})")
    #: The module class the port builds (mutants swap it).
    mlp: type[MLP] = MLP
    #: `vjp` returns evaluated numpy and cannot be observed: a port that overrides it is
    #: refused, and changes its model here instead (values and evidence both come from these).
    model_methods = "pullback (or mlp, the module class it builds)"
    #: `vjp` runs `pullback`, and `prepared_vjp` its two steps (`pulling`): a port that
    #: overrides `pullback` alone is timed by `vjp` whole (`conformance.comparison.warm`).
    vjp_builds_on: ClassVar[tuple[str, ...]] = ("pullback",)

    #: The block with variables and RNGs (property (l); `stateful`): as a user writes it, and
    #: the fix beside it.
    state_variants: ClassVar[dict[str, str]] = {
        "default": "nn.utils.checkpoint(block) over nn.Dropout and nn.BatchNorm, after "
        "mx.random.seed(seed)",
        "explicit_key": "nn.utils.checkpoint(block), dropout on key=mx.random.key(seed), the "
        "batch statistics returned and the running ones updated outside",
    }
    #: The stack's step of the block (`OffersStatefulBlock.state_step` runs it).
    block_step = staticmethod(block_with_state.state_step)

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The numpy canonical init, loaded into the MLX module and exported
        # again, so that the layout converters are part of what is checked.
        params = canonical_params(seed, dim, features)
        model = build_mlp(params_to_arrays(params), mlp=self.mlp)
        return arrays_to_params(dict(nn.utils.tree_flatten(model.parameters())))

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        nesting, checkpoint = self.nesting(checkpoint), bool(self.policy(checkpoint))
        model = build_mlp(
            params_to_arrays(params), checkpoint=checkpoint, mlp=self.mlp, nesting=nesting
        )
        return to_host_array(model(as_input(x)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        pulled = self.pullback(params, x, cotangent, checkpoint=checkpoint)
        mx.eval(pulled.grads)
        return out_in.to_grads(pulled.grads[:-1], pulled.grads[-1], to_host_array)

    def prepared_vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Callable[[], list[mx.array]]:
        """`vjp`'s call: `pulling`'s arrays made and evaluated here, once; the callable builds
        the `mx.vjp` graph and evaluates its gradients (each parameter's, then x's)."""
        pull = self.pulling(params, x, cotangent, checkpoint=checkpoint)

        def call() -> list[mx.array]:
            grads = pull().grads
            mx.eval(grads)
            return grads

        return call

    def pullback(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: bool = True,
        tap: Callable[[str, mx.array], mx.array] = no_tap,
    ) -> Pullback:
        """The MLP's `mx.vjp`, unevaluated (MLX is lazy): `vjp` evaluates it, `backward_record`
        reads its graph, so both come from this one call. `tap` names the model's arrays for
        the record. A port with a model of its own overrides this (or `mlp`), never `vjp`."""
        return self.pulling(params, x, cotangent, checkpoint=checkpoint, tap=tap)()

    def pulling(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: bool = True,
        tap: Callable[[str, mx.array], mx.array] = no_tap,
    ) -> Callable[[], Pullback]:
        """`pullback` in two steps: its arrays made and evaluated now (graph sources, so that
        names stick), its `mx.vjp` made by the callable returned."""
        run = _call(bool(self.policy(checkpoint)), tap, self.mlp, self.nesting(checkpoint))
        primals = {**params_to_arrays(params), "x": as_input(x)}
        cotangent = _array(cotangent)
        mx.eval(list(primals.values()), cotangent)

        def pull() -> Pullback:
            outputs, grads = mx.vjp(lambda *a: [run(*a)], list(primals.values()), [cotangent])
            return Pullback(outputs[0], grads, primals, cotangent)  # x is the last primal

        return pull

    # -- evidence: MLX's instrument on the port's own graphs ---------------------------

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        """MLX's instrument on the graph of this port's own `pullback(params, x, ones)`, the
        one `vjp` evaluates (`vjp` returns numpy, and evaluating frees the graph: a port that
        overrides `vjp` is refused when its class is made)."""
        tap = Tap()
        ones = np.ones(params.features, np.float32)
        pulled = self.pullback(params, x, ones, checkpoint=checkpoint, tap=tap)
        origins = {name: "parameter" for name in pulled.primals} | {"x": "input"}
        record = read(pulled.output, pulled.grads, pulled.primals, origins, pulled.cotangent, tap)
        return record.backward_record()

    @observes("nn_checkpoint_forward")
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """MLX's instrument on `mx.vjp` of this port's own `nn_checkpoint_forward(seed, x,
        features)` (lazy: the very graph its value comes from), a cotangent of ones."""
        features = check_features(features)
        with tapping(Tap()) as tap:
            return self.stack.record(
                lambda x: self.nn_checkpoint_forward(seed, x, features),
                {"x": as_input(x)},
                {"x": "input"},
                mx.ones((features,), mx.float32),
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
        return _exercise(seed, x, features, active_tap(), self.mlp)


nn_checkpoint_forward = Mlx.exported()
