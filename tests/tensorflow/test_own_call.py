"""The TensorFlow base reads its evidence off the port's own call (`instrument.observe` for
`vjp`, run eagerly; the traced `nn_checkpoint_forward` for the exercise), never off a second
model: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint has the
right values and fails (e), while the base's block still checkpoints."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties.e_evidence import check_evidence
from conformance.mutants import load
from implementations.contract import Grads
from implementations.stacks.tensorflow import tf
from implementations.stacks.tensorflow.tensorflow import (
    TensorFlow,
    block,
    params_to_tensors,
    tensors_to_params,
)
from implementations.stacks.tensorflow.tensorflow_mutants import OwnModelWithoutCheckpoint
from tests.support.own_call_kit import PARAMS, Case, OriginsFollowXKit, OwnCallKit, X


class TestOwnCall(OwnCallKit, OriginsFollowXKit):
    PORT, MUTANT = TensorFlow, OwnModelWithoutCheckpoint
    MUTANT_NAME = "tf_own_model_no_checkpoint"
    KILLED_WITH = r"saves 1 activation.*a: output of Relu"

    @staticmethod
    def native(out):
        return out.numpy()


def test_the_region_mutant_s_own_vjp_is_what_the_record_reads():
    """`region` is the block `vjp` runs too: swapping it for the plain block shows in the vjp
    record (relu's output kept, nothing rerun), not only in the exercise's."""
    record = load("tf_no_recompute_grad").port.backward_record(PARAMS, X)
    assert [t.role for t in record.saved_by_origin("activation")] == ["a"]
    assert record.recomputed == {}
    assert record.checkpoint_regions == 0


def test_the_backward_record_observes_the_port_s_own_vjp():
    """A port overriding `vjp` (and `forward`) only: the exercise is the base's, checkpointed,
    so only the record of the vjp itself can reject it."""

    class OwnVjpOnly(TensorFlow):
        name = "own_vjp_only"
        forward = OwnModelWithoutCheckpoint.forward
        vjp = OwnModelWithoutCheckpoint.vjp

    with pytest.raises(ConformanceError, match=r"VJP with checkpoint on: saves 1 activation"):
        check_evidence(OwnVjpOnly(), None, (Case(), 3))


def test_the_instrument_puts_back_what_it_turns_on():
    """The record runs the call eagerly under an op callback and a profiler: all three are as
    it found them after, also when the call raises."""
    from tensorflow.python.framework import op_callbacks

    from implementations.stacks.tensorflow import instrument, tf

    def failing():
        raise RuntimeError("the port's own error")

    before = (tf.config.functions_run_eagerly(), sys.getprofile())
    TensorFlow().backward_record(PARAMS, X)
    with pytest.raises(RuntimeError, match="the port's own error"):
        instrument.observe(failing, X, ())
    assert (tf.config.functions_run_eagerly(), sys.getprofile()) == before
    assert not op_callbacks.should_invoke_op_callbacks()


def test_values_read_from_variables_are_labelled_by_their_values():
    """A port that keeps x in a `tf.Variable` and never checkpoints: what it computes from the
    variable's value is an activation still (a handle is no source of harmless data)."""

    class XInVariable(TensorFlow):
        name = "x_in_variable"

        def vjp(self, params, x, cotangent, *, checkpoint=True):
            held, tensors = tf.Variable(np.asarray(x, np.float32)), params_to_tensors(params)
            with tf.GradientTape() as tape:
                tape.watch(tensors)
                y = block(held, *tensors)
            dx, *grads = tape.gradient(y, [held, *tensors], output_gradients=cotangent)
            return Grads.of(tensors_to_params(grads), dx.numpy())

    record = XInVariable().backward_record(PARAMS, X)
    assert [t.role for t in record.saved_by_origin("activation")] == ["a"]
    assert record.saved_by_origin("input")
