"""The HIPS autograd port: the MLP as autograd primitives on numpy, under a deferred checkpoint.

Its parameters are Flax's canonical ones, computed by the numpy init
(`implementations.stacks.numpy`); autograd's arrays are numpy arrays in the
canonical layout (kernels `(in, out)`), so the converters only copy and check
shapes. The checkpoint is `remat.checkpoint`: `autograd.checkpoint`'s recipe
(a primitive whose VJP differentiates the block again) with that trace made by
the backward pass, where `autograd.checkpoint` makes it in the forward pass and
so keeps every activation (see `remat`). Gradients are `make_vjp`'s; relu is a
primitive whose gradient at 0 is Flax's 0 (`block`). Imports autograd, numpy and
the project's numpy-only modules, never jax or torch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from autograd import make_vjp

from implementations.composition import wrapped
from implementations.contract import (
    BackwardRecord,
    Grads,
    Params,
    check_exercise,
    check_features,
    check_seed,
    param_shapes,
)
from implementations.policies import whole_block
from implementations.stacks import Port
from implementations.stacks.autograd import STACK, as_input, checkpoint, instrument, to_host_array
from implementations.stacks.autograd import stateful as block_with_state
from implementations.stacks.autograd.block import block, checkpointed_block
from implementations.stacks.base import observes
from implementations.stacks.numpy import canonical_params
from implementations.stateful_port import OffersStatefulBlock

#: The block's parameters, in the order the block takes them (canonical names and layout).
NAMES = ("w1", "b1", "w2", "b2")


# ---------------------------------------------------------------------------
# Layout converters: autograd's arrays are the canonical ones (numpy, kernel (in, out))
# ---------------------------------------------------------------------------


def params_to_arrays(params: Params) -> tuple[np.ndarray, ...]:
    """Canonical params as the block's arrays `(w1, b1, w2, b2)`: writable float32 copies."""
    arrays = tuple(np.array(getattr(params, name), np.float32, copy=True) for name in NAMES)
    expected = param_shapes(params.dim, params.features)
    for name, array in zip(NAMES, arrays, strict=True):
        assert array.shape == expected[name], (name, array.shape)
    return arrays


def arrays_to_params(arrays: tuple[Any, ...]) -> Params:
    """The block's arrays `(w1, b1, w2, b2)` (or their gradients) as canonical params;
    `Params` checks every shape against w1's."""
    return Params(**{name: to_host_array(a) for name, a in zip(NAMES, arrays, strict=True)})


@functools.cache
def composed(region: Callable, case: str) -> Callable:
    """`region` (the port's checkpointed block) composed as `case` says
    (`implementations.composition`): `once`, as it is; `twice`, wrapped again,
    `checkpoint(region)`; `under_trainer`, the model's whole call (which runs `region`) inside a
    trainer's `checkpoint`. Made once per region and case: each `checkpoint` is a primitive
    that autograd's tables keep for good (`remat.checkpoint`)."""
    if case == "once":
        return region
    if case == "twice":
        return checkpoint(region)

    def model_call(w1, b1, w2, b2, x):  # the model, its own region inside
        return region(w1, b1, w2, b2, x)

    return checkpoint(model_call)


# ---------------------------------------------------------------------------
# The exercise
# ---------------------------------------------------------------------------


def _exercise(seed: Any, x: Any, features: Any, run: Callable) -> Any:
    seed, x, features = check_exercise(seed, x, features, as_input)
    dim = int(np.shape(x)[0])
    params = canonical_params(seed, dim, features)
    arrays = tuple(getattr(params, name) for name in NAMES)  # read-only: never written
    return run(*arrays, x)  # (D,) -> (F,)


# ---------------------------------------------------------------------------
# The port
# ---------------------------------------------------------------------------


class HipsAutograd(OffersStatefulBlock, Port):
    """The HIPS autograd port: the MLP as autograd primitives, the checkpoint deferred."""

    name = "hips_autograd"
    framework = "autograd"
    stack = STACK
    extra = "autograd"
    checkpoint_api = "autograd.checkpoint, its VJP traced in backward"
    policies, inexpressible = whole_block(
        "autograd.checkpoint",
        "the plain block",
        "remat.checkpoint(block): autograd.checkpoint's recipe, VJP traced in backward",
        keeps="it keeps the block's inputs only",
        save_named="autograd has no names for values: only the checkpoint's placement",
        offload_dots="autograd runs on numpy in host memory: there is nowhere to offload",
    )
    compositions = wrapped("remat.checkpoint({})")
    #: The block the full policy runs (mutants swap it).
    checkpointed: ClassVar[Callable] = staticmethod(checkpointed_block)

    def _block(self, checkpoint: Any) -> Callable:
        if not self.policy(checkpoint):
            return block
        return composed(self.checkpointed, self.nesting(checkpoint))

    #: The block with variables and RNGs (property (l); `stateful`): the port's checkpoint
    #: and autograd's own over numpy's global generator, and the fix beside them.
    state_variants: ClassVar[dict[str, str]] = {
        "default": "remat.checkpoint(block) (autograd.checkpoint's recipe, traced in backward), "
        "dropout from np.random after np.random.seed(seed mod 2**32)",
        "upstream": "autograd.checkpoint(block) (1.9.1) on the arrays as one tuple, dropout from "
        "np.random after np.random.seed(seed mod 2**32)",
        "explicit_seed": "remat.checkpoint(block), the mask from np.random.default_rng((seed, "
        "1)) made in the block, the statistics applied once after the step",
    }
    #: The stack's step of the block (`OffersStatefulBlock.state_step` runs it).
    block_step = staticmethod(block_with_state.state_step)

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The numpy canonical init, through the port's arrays and back, so that the
        # converters are part of what is checked.
        return arrays_to_params(params_to_arrays(canonical_params(seed, dim, features)))

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        run = self._block(checkpoint)
        return to_host_array(run(*params_to_arrays(params), as_input(x)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        *grads, dx = self.prepared_vjp(params, x, cotangent, checkpoint=checkpoint)()
        return Grads(**arrays_to_params(tuple(grads)).as_dict(), x=to_host_array(dx))

    def prepared_vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Callable[[], tuple[np.ndarray, ...]]:
        """`vjp`'s call: the block and arrays made here, once; the callable runs `make_vjp` and
        the pullback, and returns the gradients of each parameter, then of x."""
        run, arrays = self._block(checkpoint), (*params_to_arrays(params), as_input(x))
        cotangent = np.asarray(cotangent, np.float32)
        return lambda: make_vjp(run, (0, 1, 2, 3, 4))(*arrays)[0](cotangent)

    # -- evidence: autograd's instrument on the port's own calls (`instrument`) ----------

    @observes("vjp")
    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: Any = True
    ) -> BackwardRecord:
        """The instrument on this port's own `vjp(params, x, ones, checkpoint=checkpoint)`:
        whatever a subclass overrides, the evidence is read off the call whose values (c)
        checks."""
        call = self.own_vjp(params, x, checkpoint)
        return instrument.observe(call, x, params.as_dict().values()).backward_record()

    @observes("nn_checkpoint_forward")
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """The instrument on this port's own `nn_checkpoint_forward(seed, x, features)` under
        `make_vjp` with respect to x, and the backward pass of its output (ones)."""
        features = check_features(features)

        def call() -> None:
            pullback, _ = make_vjp(lambda x: self.nn_checkpoint_forward(seed, x, features))(
                as_input(x)
            )
            pullback(np.ones(features, np.float32))

        # The exercise's parameters are Flax's for the seed: their values, to tell them apart.
        canonical = canonical_params(check_seed(seed), int(np.shape(x)[0]), features)
        return instrument.observe(call, x, canonical.as_dict().values()).backward_record()

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> Any:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)`, applied to x through a
        checkpoint.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
        - `x`: a finite real vector of shape `(D,)`: a numpy array, a list, or a value
          traced by autograd (`grad`, `make_vjp`), to which gradients then flow back.
          It is never modified.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 output, a numpy array (a box when x is traced).
        """
        return _exercise(seed, x, features, self.checkpointed)


nn_checkpoint_forward = HipsAutograd.exported()
