"""Paddle under composition, as measured (Paddle 3.3): a reentrant `recompute` keeps x and
reruns the whole block in backward (2 matmuls); wrapped twice, or under a trainer's recompute,
it still keeps x but reruns 4: the outer `RecomputeFunction.backward` reruns the inner
recompute's forward, whose own backward reruns the block again (a documented degradation)."""

from __future__ import annotations

import numpy as np

from implementations.stacks.paddle import instrument
from implementations.stacks.paddle.loaded import paddle
from implementations.stacks.paddle.paddle import Paddle
from tests.support.composition_kit import (
    PARAMS,
    CountedRowsKit,
    UndeclaredCaseKit,
    X,
    records_of,
)


class TestComposition(CountedRowsKit, UndeclaredCaseKit):
    PORT, ONCE = Paddle, "recompute(block, x)"
    #: Measured: kept roles, forward matmuls, forward matmuls again in backward.
    ROWS = {"once": (["x"], 2, 2), "twice": (["x"], 2, 4), "under_trainer": (["x"], 2, 4)}  # noqa: RUF012

    @staticmethod
    def matmuls(checkpoint):
        port, ones, at_backward = Paddle(), np.ones(4, np.float32), []

        def first_entry(depth):
            if depth == 0 and not at_backward:
                at_backward.append(count())

        with instrument.operator_statistics() as count:
            with instrument.engine_entered(first_entry):
                port.vjp(PARAMS, X, ones, checkpoint=checkpoint)
            total = count()
        return at_backward[0], total - at_backward[0]


def test_the_nested_recompute_reruns_the_layers_once_per_level():
    # The leaf layers run in the backward pass tell the same story as the matmul count.
    assert records_of(Paddle(), "once")[0].recomputed == {"Linear": 2, "ReLU": 1}
    assert records_of(Paddle(), "twice")[0].recomputed == {"Linear": 4, "ReLU": 2}


def test_the_operator_statistics_flag_is_put_back():
    flag = "FLAGS_low_precision_op_list"
    before = paddle.get_flags([flag])[flag]
    records_of(Paddle(), "twice")
    assert paddle.get_flags([flag])[flag] == before
