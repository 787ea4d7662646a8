"""The TensorFlow port: `tf.recompute_grad` around a two-layer MLP of TensorFlow ops.

The block is a function of tensors, its parameters arguments like x, so that
`recompute_grad` differentiates them as inputs (the Keras port on the
TensorFlow backend covers the other path, parameters held in `tf.Variable`s).
Its layout is the canonical one: `tf.matmul(x, kernel)` takes the kernel
`(in, out)`, as Keras's `Dense.kernel` and Flax's `Dense` do; the converters
only check shapes. The parameters are Flax's canonical ones: in an eager
`nn_checkpoint_forward`, Flax's init in TensorFlow ops compiled by XLA
(the TensorFlow stack's `flax_init`, also `init_params`); traced into a graph, the
numpy init (`implementations.porting.numpy`). Both give the same bits.

`nn_checkpoint_forward` runs eagerly, or inside a `tf.function` (traced
inline; `seed` and `features` are then Python values, one trace each),
also with `jit_compile=True`. Evidence is read off the port's own calls: its
`vjp` run eagerly under an op callback (`instrument.observe`), its `nn_checkpoint_forward`
traced into one graph (the TensorFlow stack's `record`). Imports TensorFlow, numpy
and the project's numpy-only modules, never JAX or torch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from implementations.composition import wrapped
from implementations.contract import (
    PARAM_NAMES,
    BackwardRecord,
    Grads,
    Params,
    check_features,
    check_seed,
    check_sizes,
)
from implementations.policies import whole_block
from implementations.stacks import Port
from implementations.stacks.base import observes
from implementations.stacks.numpy import canonical_params
from implementations.stacks.tensorflow import (
    STACK,
    as_input,
    flax_init,
    float32_tensor,
    instrument,
    integer_argument,
    tf,
    to_host_array,
)
from implementations.stacks.tensorflow import block as the_block
from implementations.stacks.tensorflow import stateful as the_state_block
from implementations.stateful import DEFAULT_VARIANT
from implementations.stateful_port import OffersStatefulBlock

Tensors = tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]  # (w1, b1, w2, b2)


def block(x: tf.Tensor, w1: tf.Tensor, b1: tf.Tensor, w2: tf.Tensor, b2: tf.Tensor) -> tf.Tensor:
    """`Dense(F)` -> relu -> `Dense(F)` on a `(D,)` x: `(F,)`, the stack's block
    (`block.block`) on x as a row: what the instrument watches is the block measured."""
    return tf.reshape(the_block.block(x[tf.newaxis], w1, b1, w2, b2), [-1])  # (1, F) -> (F,)


# The backward pass keeps the region's arguments (x and the parameters) and
# reruns the block under a tape of its own. TensorFlow >= 2.2 passes each
# argument through an identity first, so one tensor given twice (b1 is b2)
# gets both gradients (issue 36999; tests/tensorflow/test_tensorflow.py pins it).
checkpointed_block = tf.recompute_grad(block)


@functools.cache
def composed(region: Callable, case: str) -> Callable:
    """`region` (the port's `tf.recompute_grad` block) composed as `case` says
    (`implementations.composition`), made once per region and case: `once`, as it is;
    `twice`, wrapped again, `tf.recompute_grad(region)`; `under_trainer`, the model's whole
    call (which runs `region`) inside a trainer's `tf.recompute_grad`."""
    if case == "once":
        return region
    if case == "twice":
        return tf.recompute_grad(region)

    def model_call(x, w1, b1, w2, b2):  # the model, its own region inside
        return region(x, w1, b1, w2, b2)

    return tf.recompute_grad(model_call)


def mlp(params: Sequence[tf.Tensor], x: tf.Tensor, *, checkpoint: bool = True) -> tf.Tensor:
    """The MLP, `(D,) -> (F,)`, through `tf.recompute_grad` (`True`) or plain (`False`)."""
    return (checkpointed_block if checkpoint else block)(x, *params)


# ---------------------------------------------------------------------------
# Layout converters: canonical (in, out) kernels = tf.matmul's (in, out)
# ---------------------------------------------------------------------------


def params_to_tensors(params: Params) -> Tensors:
    """Canonical params as float32 tensors, kernels `(in, out)` as `tf.matmul(x, kernel)` takes."""
    dim, features = params.dim, params.features
    w1, b1, w2, b2 = (tf.constant(np.array(a, np.float32)) for a in params.as_dict().values())
    assert tuple(w1.shape) == (dim, features), w1.shape  # (D, F)
    assert tuple(w2.shape) == (features, features), w2.shape  # (F, F)
    assert tuple(b1.shape) == tuple(b2.shape) == (features,), (b1.shape, b2.shape)
    return w1, b1, w2, b2


def tensors_to_params(tensors: Sequence[Any]) -> Params:
    """`(w1, b1, w2, b2)` tensors, or gradients shaped like them, as canonical params."""
    arrays = dict(zip(PARAM_NAMES, (to_host_array(t) for t in tensors), strict=True))
    w1 = arrays["w1"]
    if w1.ndim != 2:
        raise ValueError(f"w1 must be 2-D (D, F), got shape {w1.shape}")
    return Params(**arrays)  # checks every shape against w1's (D, F)


# ---------------------------------------------------------------------------
# The exercise
# ---------------------------------------------------------------------------


def exercise(seed: Any, x: Any, features: Any, region: Callable = checkpointed_block) -> tf.Tensor:
    """`nn_checkpoint_forward`, the block run through `region` (mutants swap it)."""
    seed = check_seed(integer_argument(seed, "seed"))
    features = check_features(integer_argument(features, "features"))
    x = as_input(x)
    dim = x.shape[0]
    check_sizes(dim, features)
    if tf.executing_eagerly():
        # Flax's init as one XLA program: at D = F = 1024, 5 ms where numpy takes 25.
        w1, w2 = flax_init.kernels(seed, dim, features)
        b1, b2 = tf.zeros([features], tf.float32), tf.zeros([features], tf.float32)
        return region(x, w1, b1, w2, b2)  # (D,) -> (F,)
    # Traced into a graph: the numpy init's values become its constants, once per trace.
    params = canonical_params(seed, dim, features)
    return region(x, *params_to_tensors(params))


# ---------------------------------------------------------------------------
# The port
# ---------------------------------------------------------------------------


def _step(x, w1, b1, w2, b2, cotangent, region: Callable):
    # x's and the parameters' gradients of the MLP, pulled back from the cotangent.
    params = (w1, b1, w2, b2)
    with tf.GradientTape() as tape:
        tape.watch([x, *params])
        y = region(x, *params)
    return tape.gradient(y, [x, *params], output_gradients=cotangent)


def _forward(x, w1, b1, w2, b2, region: Callable):
    return region(x, w1, b1, w2, b2)


@functools.cache
def compiled(kind: str, region: Callable) -> Callable:
    """`forward` or `vjp` (`kind`) of the MLP run through `region` (the port's block, or the
    plain one for checkpoint off), as one `tf.function` kept per region; after two shapes
    TensorFlow traces one for any shape (reduce_retracing), so the suite's many shapes do not
    retrace each time."""
    fn = {"forward": _forward, "vjp": _step}[kind]
    return tf.function(functools.partial(fn, region=region), reduce_retracing=True, autograph=False)


class TensorFlow(OffersStatefulBlock, Port):
    """The TensorFlow port: `tf.recompute_grad` around an MLP of TensorFlow ops."""

    name = "tensorflow"
    framework = "tensorflow"
    stack = STACK
    checkpoint_api = "tf.recompute_grad"
    policies, inexpressible = whole_block(
        "tf.recompute_grad",
        "the plain block",
        "tf.recompute_grad(block)",
        keeps="it reruns the whole region, both matmuls (a documented degradation)",
        save_named="no names: only the region's placement can change",
        offload_dots="tf.recompute_grad has no offload",
    )
    compositions = wrapped("tf.recompute_grad({})")
    #: The block as the checkpoint runs it (mutants swap it).
    region: Callable = staticmethod(checkpointed_block)
    #: The block with variables and RNGs (property (l); `stateful`): as a user writes it, and
    #: the fix beside it.
    state_variants: ClassVar[dict[str, str]] = {
        DEFAULT_VARIANT: "tf.recompute_grad(block), tf.nn.dropout after tf.random.set_seed(seed), "
        "the statistics assigned in the block",
        "stateless": "tf.recompute_grad(block), tf.nn.experimental.stateless_dropout(seed=[seed, "
        "1]), the statistics returned and assigned outside",
    }
    #: The stack's step of the block (`OffersStatefulBlock.state_step` runs it).
    block_step = staticmethod(the_state_block.state_step)

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The exercise's init (XLA), made into TensorFlow's tensors and read
        # back, so that the converters are part of what is checked.
        params = self.stack.canonical_params(seed, dim, features)
        return tensors_to_params(params_to_tensors(params))

    def run_region(self, checkpoint: Any) -> Callable:
        """The block as `checkpoint=` runs it: plain, the port's region, or that region
        composed (`composed`)."""
        if not self.policy(checkpoint):
            return block
        return composed(self.region, self.nesting(checkpoint))

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        run = compiled("forward", self.run_region(checkpoint))
        return to_host_array(run(float32_tensor(x), *params_to_tensors(params)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        dx, *grads = self.prepared_vjp(params, x, cotangent, checkpoint=checkpoint)()
        return Grads.of(tensors_to_params(grads), to_host_array(dx))

    def prepared_vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Callable[[], Any]:
        """`vjp`'s call: the compiled function and tensors made here, once; the callable runs
        it (eager TensorFlow returns computed tensors: dx, then each parameter's gradient)."""
        run = compiled("vjp", self.run_region(checkpoint))
        tensors = (float32_tensor(x), *params_to_tensors(params), float32_tensor(cotangent))
        return lambda: run(*tensors)

    @observes("vjp")
    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        """The instrument on this port's own `vjp(params, x, ones, checkpoint=checkpoint)`, run
        eagerly (`instrument.observe`): whatever a subclass overrides, the evidence is read off
        the call whose values (c) checks."""
        self.policy(checkpoint)  # an undeclared policy is refused before anything runs
        return instrument.observe(self.own_vjp(params, x, checkpoint), x, params.as_dict().values())

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> tf.Tensor:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)`, applied to x through
        `tf.recompute_grad`.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d
          array or tensor), at most `2**63 - 1`.
        - `x`: a finite real vector of shape `(D,)`: a `tf.Tensor`, a
          `tf.Variable`, a numpy array or a list. It is never modified; under a
          `GradientTape` that watches it (a trainable variable is watched by
          itself), gradients flow back to it.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 tensor. Inside a `tf.function` x may be
        symbolic (its shape must be static; its values cannot be checked), and
        `seed` and `features` must be Python values or constants.
        """
        return exercise(seed, x, features, self.region)


nn_checkpoint_forward = TensorFlow.exported()
