"""DeepSpeed under composition, as measured (deepspeed 0.19.8, torch 2.13): its reentrant
`checkpoint` keeps x and reruns the whole block in backward (2 matmuls); wrapped twice, or
under a trainer's checkpoint over the model's call, it still keeps x but reruns 4: the outer
`CheckpointFunction.backward` reruns the inner checkpoint's forward under enable_grad (its
output is only the inner node's), whose backward reruns the block again (a documented
degradation). The inner region exists in the outer's rerun only: 2 regions."""

from __future__ import annotations

from implementations.stacks.deepspeed.deepspeed import DeepSpeed
from tests.support.composition_kit import PARAMS, MeasuredRowsKit, UndeclaredCaseKit, X


class TestComposition(MeasuredRowsKit, UndeclaredCaseKit):
    PORT, ONCE = DeepSpeed, "checkpoint(block, x)"
    #: Measured: kept roles, forward matmuls, forward matmuls again in backward, regions.
    MEASURED = {  # noqa: RUF012
        "once": (["x"], 2, 2, 1),
        "twice": (["x"], 2, 4, 2),
        "under_trainer": (["x"], 2, 4, 2),
    }


def test_the_plain_backward_pass_runs_the_gradients_matmuls_only():
    plain = DeepSpeed().backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls, plain.checkpoint_regions) == (2, 4, 0)
