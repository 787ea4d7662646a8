"""The TensorFlow base reads its evidence off the port's own call (`observed` for `vjp`, run
eagerly; the traced `nn_checkpoint_forward` for the exercise), never off a second model: a port
whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint has the right values and
fails (e), while the base's block still checkpoints."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.contract import Grads
from implementations.stacks.tensorflow import tf
from implementations.stacks.tensorflow.tensorflow import (
    TensorFlow,
    block,
    params_to_tensors,
    tensors_to_params,
)
from implementations.stacks.tensorflow.tensorflow_mutants import OwnModelWithoutCheckpoint
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_model_mutant_has_the_right_values():
    port, mutant = TensorFlow(), OwnModelWithoutCheckpoint()
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
    ours, theirs = mutant.vjp(PARAMS, X, cotangent), port.vjp(PARAMS, X, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        mutant.nn_checkpoint_forward(3, X, 4).numpy(),
        port.nn_checkpoint_forward(3, X, 4).numpy(),
        rtol=1e-6,
    )


def test_property_e_kills_the_own_model_mutant_and_passes_the_port():
    assert MUTANTS["tf_own_model_no_checkpoint"].killed_by == "e_evidence"
    mutant = load("tf_own_model_no_checkpoint").port
    with pytest.raises(ConformanceError, match=r"saves 1 activation.*a: output of Relu"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(TensorFlow(), None, (_Case(), 3))


def test_the_exercise_record_observes_the_port_s_own_exercise():
    class OwnExerciseOnly(TensorFlow):
        name = "own_exercise_only"
        nn_checkpoint_forward = OwnModelWithoutCheckpoint.nn_checkpoint_forward

    record = OwnExerciseOnly().exercise_record(3, X, 4)
    assert {t.role for t in record.saved_by_origin("activation")} == {"a"}
    assert record.recomputed == {}
    assert record.checkpoint_regions == 0
    checked = TensorFlow().exercise_record(3, X, 4)
    assert checked.saved_roles == {"x"}
    assert checked.checkpoint_regions == 1


@pytest.mark.parametrize("x", [X, np.zeros(3, np.float32)], ids=["x", "zeros"])
def test_origins_follow_the_data_from_x(x):
    """With the checkpoint off, x (a view of it, as the block reshapes it) is the input, the
    kernels parameters, relu's output the one activation (its role a), whatever x's values;
    with it on, only the block's inputs."""
    port = TensorFlow()
    off = port.backward_record(PARAMS, x, checkpoint=False)
    assert {(t.origin, t.role) for t in off.saved} == {
        ("input", "x"),
        ("parameter", ""),
        ("activation", "a"),
    }
    on = port.backward_record(PARAMS, x, checkpoint=True)
    assert {t.origin for t in on.saved} == {"input", "parameter"}
    assert on.saved_roles == {"x"}


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
        check_evidence(OwnVjpOnly(), None, (_Case(), 3))


def test_the_instrument_puts_back_what_it_turns_on():
    """The record runs the call eagerly under an op callback and a profiler: all three are as
    it found them after, also when the call raises."""
    from tensorflow.python.framework import op_callbacks

    from implementations.stacks.tensorflow import observed, tf

    def failing():
        raise RuntimeError("the port's own error")

    before = (tf.config.functions_run_eagerly(), sys.getprofile())
    TensorFlow().backward_record(PARAMS, X)
    with pytest.raises(RuntimeError, match="the port's own error"):
        observed.observe(failing, X, ())
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
