"""TensorFlow under composition, as measured (tensorflow 2.21, eagerly, as the instrument runs
the port's vjp): `tf.recompute_grad` keeps x and reruns the whole block (2 matmuls); wrapped
twice, or under a trainer's `recompute_grad` over the model's call, the outer rerun runs the
inner region's forward for nothing before the inner reruns the block again (4 matmuls: a
documented degradation). The values do not change."""

from __future__ import annotations

from implementations.stacks.tensorflow.tensorflow import TensorFlow
from tests.support.composition_kit import PARAMS, MeasuredRowsKit, X


class TestComposition(MeasuredRowsKit):
    PORT = TensorFlow
    #: case -> (kept roles, forward matmuls, matmuls run again in backward, regions entered)
    MEASURED = {  # noqa: RUF012
        "once": (["x"], 2, 2, 1),
        "twice": (["x"], 2, 4, 2),
        "under_trainer": (["x"], 2, 4, 2),
    }


def test_the_plain_block_runs_two_matmuls_forward_and_four_backward():
    plain = TensorFlow().backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, 4)  # dW1, dx, dW2, da
