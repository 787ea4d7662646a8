"""HIPS autograd under composition, as measured (autograd 1.9.1, the port's deferred
checkpoint, `remat.checkpoint`): once keeps x and its VJP traces the block again (2 dots);
wrapped twice, or under a trainer's checkpoint over the model's call, the outer VJP runs the
inner primitive's forward for nothing before the inner VJP traces the block again (4 dots: a
documented degradation). The values do not change."""

from __future__ import annotations

from implementations.stacks.autograd.hips_autograd import HipsAutograd
from tests.support.composition_kit import PARAMS, MeasuredRowsKit, X


class TestComposition(MeasuredRowsKit):
    PORT = HipsAutograd
    #: case -> (kept roles, forward matmuls, matmuls run again in backward, regions entered)
    MEASURED = {  # noqa: RUF012
        "once": (["x"], 2, 2, 1),
        "twice": (["x"], 2, 4, 2),
        "under_trainer": (["x"], 2, 4, 2),
    }


def test_the_plain_block_runs_two_matmuls_forward_and_four_backward():
    plain = HipsAutograd().backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, 4)  # dW1, dx, dW2, da
