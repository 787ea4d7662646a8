"""Keras's ports are held to their backend's instrument (their manifest entries name it); what
Keras itself adds is a documented degradation."""

from implementations.expectations import Degradation, Expectations
from implementations.stacks.keras.torch_declarations import KERAS_TORCH
from implementations.stateful import DEFAULT_VARIANT, StateDeclaration
from implementations.stateful_port import redraws

#: Keras's remat on TensorFlow is tf.recompute_grad (keras/src/backend/tensorflow/core.py,
#: keras 3.15.1); no upstream report was found, the repro is ready for one.
_UNREPORTED = (
    "unreported upstream (keras.remat is tf.recompute_grad on TensorFlow, keras 3.15.1): "
    "repros/keras_tensorflow_remat_dropout.py"
)
_SEEDING = (
    "Dropout(rate, seed=seed mod 2**32): a keras.random.SeedGenerator (a uint32 seed on JAX), "
    "a variable whose state each draw advances"
)
_STATELESS = (
    "; stateless_call takes the seed state as an argument and returns the next one: the "
    "recompute draws from the same state, so the forward's mask, and the caller assigns the "
    "new statistics and seed state once"
)

#: The block with variables and RNGs (property (l)), measured on keras 3.15.1;
#: tests/keras/test_keras_stateful.py holds each count.
STATEFUL = {
    "keras_jax": {
        DEFAULT_VARIANT: StateDeclaration(
            "keras.remat(block.stateless_call) (jax.checkpoint)", _SEEDING + _STATELESS
        ),
    },
    "keras_tensorflow": {
        DEFAULT_VARIANT: redraws(
            "keras.remat(lambda x: block(x, training=True)) (tf.recompute_grad)",
            _SEEDING,
            _UNREPORTED,
            replay="the recompute runs Dropout again, which draws from the seed generator's "
            "advanced state: 1 fresh mask, and the gradients are the fresh mask's",
            stream="the recompute's draw advances the seed generator once more",
            updates="the recompute runs BatchNormalization again in training mode: the moving "
            "statistics take a second update (1.99 x one update at momentum 0.99)",
            fix="keras_tensorflow:stateless",
            repro="repros/keras_tensorflow_remat_dropout.py",
        ),
        "stateless": StateDeclaration(
            "keras.remat(block.stateless_call) (tf.recompute_grad)", _SEEDING + _STATELESS
        ),
    },
    "keras_torch": KERAS_TORCH,
}

EXPECTATIONS = Expectations(
    stateful=STATEFUL,
    degradations=(
        Degradation(
            "keras",
            "save_named",
            'RematScope(mode="activations") saves more than no remat at all: it cannot stand '
            "for save_named",
            "keras 3.15.1",
            'mode="activations" saves more than none',
            probe="implementations.stacks.keras.degradations:activations_saves_more_than_none",
        ),
    ),
)
