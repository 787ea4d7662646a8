"""MLX under composition, as measured (mlx 0.32.4, the lazy graph of the port's own
pullback): once keeps x and its lazy recompute keeps only fc1's AddMM (relu's mask); wrapped
twice, or under a trainer's checkpoint over the model's call, the outer recompute reruns the
inner region whole, because the inner VJP's `depends(primals, outputs)` waits on its outputs,
before the inner reruns fc1 (3 matmuls: a documented degradation). Each nested case enters two
regions. The values do not change."""

from __future__ import annotations

from implementations.stacks.mlx.mlx import Mlx
from tests.support.composition_kit import PARAMS, MeasuredRowsKit, X


class TestComposition(MeasuredRowsKit):
    PORT = Mlx
    #: case -> (kept roles, forward matmuls, matmuls run again in backward, regions entered)
    MEASURED = {  # noqa: RUF012
        "once": (["x"], 2, 1, 1),
        "twice": (["x"], 2, 3, 2),
        "under_trainer": (["x"], 2, 3, 2),
    }


def test_the_plain_block_runs_two_matmuls_forward_and_four_backward():
    plain = Mlx().backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, 4)  # dW1, dx, dW2, da: Matmul
