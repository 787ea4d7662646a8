"""MindSpore (PyNative) under composition, as measured (MindSpore 2.10): `Cell.recompute()`
(reentrant by default) keeps x and reruns the whole cell in backward (2 matmuls); inside an
outer cell marked `recompute()`, or under a trainer's `mindspore.recompute`, it still keeps x
but reruns 4: the outer `_RecomputeCell.bprop` reruns the inner recomputed cell's forward,
whose own bprop reruns the block again (a documented degradation)."""

from __future__ import annotations

import numpy as np

from implementations.stacks.mindspore import instrument, ms
from implementations.stacks.mindspore.mindspore import MindSpore
from tests.support.composition_kit import (
    PARAMS,
    CountedRowsKit,
    UndeclaredCaseKit,
    X,
    records_of,
)


class TestComposition(CountedRowsKit, UndeclaredCaseKit):
    PORT, ONCE = MindSpore, "Cell.recompute()"
    #: Measured: kept roles, forward matmuls, forward matmuls again in backward.
    ROWS = {"once": (["x"], 2, 2), "twice": (["x"], 2, 4), "under_trainer": (["x"], 2, 4)}  # noqa: RUF012

    @staticmethod
    def matmuls(checkpoint):
        port, ones = MindSpore(), np.ones(4, np.float32)
        with instrument.watch(X, None) as seen:
            port.vjp(PARAMS, X, ones, checkpoint=checkpoint)
        return seen.matmuls["forward"], seen.matmuls["backward"]


def test_the_nested_recompute_reruns_the_cells_once_per_level():
    # The leaf cells run in the backward pass tell the same story as the matmul count.
    assert records_of(MindSpore(), "once")[0].recomputed == {"Affine": 2, "ReLU": 1}
    assert records_of(MindSpore(), "twice")[0].recomputed == {"Affine": 4, "ReLU": 2}
    assert records_of(MindSpore(), "under_trainer")[0].recomputed == {"Affine": 4, "ReLU": 2}


def test_the_instrument_puts_the_functional_and_the_executor_back():
    matmul, grad = ms.ops.matmul, instrument.executor().grad
    records_of(MindSpore(), "twice")
    assert ms.ops.matmul is matmul
    assert instrument.executor().grad == grad
