"""`JaxPort`: the base of every JAX port. A port declares its model; the base builds the rest.

JAX ports differ only in how they hold the parameters and how they run the
MLP, so a subclass defines three methods:

- `to_native(w1, b1, w2, b2)`: canonical-layout arrays (numpy, jax arrays or
  tracers) as the port's own parameters, a pytree whose leaves are arrays;
- `to_canonical(native)`: the inverse, `(w1, b1, w2, b2)`; it converts
  gradients too, which have the parameters' structure;
- `apply(native, x, checkpoint)`: the MLP, `(D,) -> (F,)`, through the
  framework's checkpoint under the remat policy `checkpoint` (a `Policy`;
  `True`/`False` from older callers are FULL/NONE: `as_policy`), plain for NONE;
  for a port that declares the composition case `twice`, `checkpoint` may be
  `Nesting("twice")`: its full-remat region wrapped again with its own API.

Composition (property (k)): `under_trainer` is the base's, for every port that
declares it (`composed`): the port's `apply` under FULL inside an outer
`jax.checkpoint` over the whole model call, as a training loop's
`jax.checkpoint` around its loss.

From these the base builds the contract: `forward` and `vjp` (one compiled
function per shape and path, converting inside the trace), `init_params` and
`nn_checkpoint_forward` (Flax's init in `jax.random`, then `apply` with the
checkpoint, in one compiled call) and both evidence records (read with
`instrument.backward_record`, one per shape: a jaxpr depends on shapes only).

**One path.** Each record traces the function whose values are checked:
`backward_record` the one `vjp` pulls back through (`differentiable`),
`exercise_record` the port's own `nn_checkpoint_forward`, overridden or not.
`vjp` takes numpy and cannot be traced, so a port that overrides it (below the
record) is refused when its class is made: it changes `apply` instead.
Imports jax only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ... import composition
from ...contract import BackwardRecord, Grads, Params
from ...policies import FULL, Policy
from ..base import Port, refuse_own_values
from .flax_init import CompiledExercise
from .stack import STACK

Arrays = tuple[Any, Any, Any, Any]  # (w1, b1, w2, b2), canonical layout


class Compiled(NamedTuple):
    """A port's compiled functions: `forward` and `vjp` on canonical arrays, and the exercise."""

    forward: Callable[..., jax.Array]
    vjp: Callable[..., tuple[Arrays, jax.Array]]
    exercise: CompiledExercise


class JaxPort(Port, abstract=True):
    """A `Port` on the JAX stack: subclasses define `to_native`, `to_canonical` and `apply`."""

    stack = STACK
    #: `vjp` takes numpy `Params` and cannot be traced: a port that overrides it is refused,
    #: and changes its model here instead (values and evidence both come from these).
    model_methods = "apply (with to_native and to_canonical)"

    # "out_in" for a port whose weights are the kernels transposed: its
    # exercise then draws them in that layout, and `to_native`'s transpose is
    # free (see `flax_init.lecun_normal`).
    kernel_layout: str = "in_out"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        refuse_own_values(cls, JaxPort, "compiled", "traces differentiable")

    def to_native(self, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        """Canonical arrays (kernels `(D, F)`, `(F, F)`; biases `(F,)`) as the port's parameters."""
        raise NotImplementedError(f"{type(self).__name__} must define to_native()")

    def to_canonical(self, native: Any) -> Arrays:
        """The port's parameters, or gradients shaped like them, as `(w1, b1, w2, b2)`."""
        raise NotImplementedError(f"{type(self).__name__} must define to_canonical()")

    def apply(self, native: Any, x: jax.Array, checkpoint: Policy) -> jax.Array:
        """The MLP on `(D,)` x under the remat policy `checkpoint` (plain for NONE): `(F,)`."""
        raise NotImplementedError(f"{type(self).__name__} must define apply()")

    # -- the contract, built from the three methods above ------------------------------

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        """Flax's init, reproduced in `jax.random` (the canonical port uses Flax's own)."""
        return self.stack.canonical_params(seed, dim, features)

    def forward(
        self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True
    ) -> np.ndarray:
        resolved = self.resolved(checkpoint)
        out = self.compiled.forward(_arrays(params), _float32(x), checkpoint=resolved)
        return np.asarray(out)

    def vjp(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: bool | Policy = True,
    ) -> Grads:
        grads, dx = self.prepared_vjp(params, x, cotangent, checkpoint=checkpoint)()
        return Grads.of(Params(*(np.asarray(g) for g in grads)), np.asarray(dx))

    def prepared_vjp(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: bool | Policy = True,
    ) -> Callable[[], tuple[Arrays, jax.Array]]:
        """`vjp`'s call: its arguments placed on the device here, once; the callable runs the
        compiled VJP and waits for its results (`(gradients, dx)`, jax arrays)."""
        args = jax.device_put((_arrays(params), _float32(x), _float32(cotangent)))
        call = functools.partial(self.compiled.vjp, *args, checkpoint=self.resolved(checkpoint))
        return lambda: jax.block_until_ready(call())

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        """The exercise: the MLP with Flax's parameters for `PRNGKey(seed)`, checkpointed, on x.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float,
          0-d array), at most `2**63 - 1`; `PRNGKey` keeps its low 32 bits.
        - `x`: a finite real vector of shape `(D,)`. A tracer is fine: its
          shape and dtype are checked, its values cannot be.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 output. It works under `jax.grad` and
        `jax.vmap` (over x), and under `jax.jit` with `seed` and `features`
        static. Called without an outer jit it is compiled already, one
        function per F (and, in jit's cache, per D): a new seed dispatches
        without tracing again.
        """
        return self.compiled.exercise(seed, x, features)

    @functools.cached_property
    def compiled(self) -> Compiled:
        """This port's compiled functions, made on first use and kept."""

        if self.kernel_layout not in ("in_out", "out_in"):
            raise ValueError(
                f"kernel_layout must be 'in_out' or 'out_in', not {self.kernel_layout!r}"
            )

        def forward(arrays: Arrays, x: jax.Array, checkpoint: Policy) -> jax.Array:
            return self.composed(self.to_native(*arrays), x, checkpoint)

        def vjp(arrays: Arrays, x: jax.Array, cotangent: jax.Array, checkpoint: Policy):
            # The function `backward_record` traces: one path for the values and the evidence.
            run, args = self.differentiable(arrays, x, checkpoint)
            _, pull_back = jax.vjp(run, *args)
            grads, dx = pull_back(cotangent)
            return self.to_canonical(grads), dx

        return Compiled(
            forward=jax.jit(forward, static_argnames="checkpoint"),
            vjp=jax.jit(vjp, static_argnames="checkpoint"),
            exercise=CompiledExercise(
                lambda arrays, x: self.apply(self.to_native(*arrays), x, FULL),
                out_in=self.kernel_layout == "out_in",
            ),
        )

    # -- composition (property (k)) ----------------------------------------------------

    def resolved(self, checkpoint: Any) -> Policy | composition.Nesting:
        """`checkpoint=` as `composed` takes it (static under jit): the declared Policy, or the
        `Nesting` of a nested case the port declares (`ValueError` naming it otherwise)."""
        policy = self.policy(checkpoint)
        return checkpoint if self.nesting(checkpoint) in composition.NESTED else policy

    def composed(self, native: Any, x: jax.Array, checkpoint: Any) -> jax.Array:
        """`apply`, composed as `checkpoint` asks. `under_trainer`: the port's own region
        (`apply` under FULL) inside an outer `jax.checkpoint` over the whole model call, as a
        training loop's `jax.checkpoint` around its loss; any other case is `apply`'s own
        (`twice` reaches it as the `Nesting`)."""
        if self.nesting(checkpoint) == "under_trainer":
            return jax.checkpoint(functools.partial(self.apply, checkpoint=FULL))(native, x)
        return self.apply(native, x, checkpoint)

    # -- evidence ------------------------------------------------------------------------

    def differentiable(
        self, params: Params | Arrays, x: Any, checkpoint: bool | Policy
    ) -> tuple[Callable, tuple]:
        """The function `vjp` differentiates, and its `(native parameters, x)` arguments as jax
        arrays (tracers inside `vjp`'s compiled function): `vjp` pulls its cotangent back
        through it, and `backward_record` traces the same function with JAX's instrument."""
        arrays = _arrays(params) if isinstance(params, Params) else params
        native = self.to_native(*(jnp.asarray(a) for a in arrays))
        run = functools.partial(self.composed, checkpoint=self.resolved(checkpoint))
        return run, (native, jnp.asarray(x, jnp.float32))

    def traced_record(self, params: Params, x: np.ndarray, checkpoint: Policy) -> BackwardRecord:
        """JAX's instrument on `differentiable`, the very function `vjp` pulls back through
        (`vjp` itself takes numpy and cannot be traced: overriding it is refused)."""
        fn, args = self.differentiable(params, x, checkpoint)
        ones = jnp.ones((params.features,), jnp.float32)
        return self.stack.record(fn, args, ("parameter", "input"), ones)


def _arrays(params: Params) -> Arrays:
    # numpy, as they are: a jitted function takes them without an eager conversion.
    return params.w1, params.b1, params.w2, params.b2


def _float32(array: Any) -> np.ndarray:
    return np.asarray(array, np.float32)
