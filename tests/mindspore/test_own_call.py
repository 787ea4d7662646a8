"""The MindSpore base reads its evidence off the port's own call (`instrument`), never off a cell
of its own: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never recompute has
the right values and fails (e), while the base's cell still recomputes."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from implementations.stacks.mindspore import instrument, ms
from implementations.stacks.mindspore.mindspore import MindSpore
from implementations.stacks.mindspore.mindspore_mutants import OwnModelWithoutRecompute
from tests.support import reference
from tests.support.own_call_kit import OwnCallKit, X


class TestOwnCall(OwnCallKit):
    PORT, MUTANT = MindSpore, OwnModelWithoutRecompute
    MUTANT_NAME = "mindspore_own_model_no_recompute"
    KILLED_WITH = r"saves 1 activation.*\(4,\) float32"

    @staticmethod
    def native(out):
        return out.asnumpy()

    def check_own_exercise(self, port):
        record = port.exercise_record(3, X, 4)
        assert [t.shape for t in record.saved_by_origin("activation")] == [(4,)]
        assert record.recomputed == {}

    def check_port_exercise(self, record):
        assert record.saved_roles == {"x"}
        assert record.recomputed == {"Affine": 2, "ReLU": 1}


@pytest.mark.parametrize("x", [X, np.zeros(3, np.float32)], ids=["x", "zeros"])
def test_origins_are_told_by_values_and_by_the_cells(x):
    """With the recompute off, x is the input, the kernels parameters, relu's output (made by
    a cell of the call) an activation named a, even where its values are x's or a bias's
    (x = 0 and D = F: a is zeros, as are x and Flax's biases)."""
    params = reference.random_params(np.random.default_rng(2), 3, 3)
    params = type(params)(params.w1, np.zeros(3, np.float32), params.w2, params.b2)
    off = MindSpore().backward_record(params, x, checkpoint=False)
    assert sorted((t.origin, t.role, t.shape) for t in off.saved) == [
        ("activation", "a", (3,)),
        ("input", "x", (3,)),
        ("parameter", "", (3, 3)),
        ("parameter", "", (3, 3)),
    ]


def test_the_watch_comes_off_after_the_call_even_when_it_fails():
    cell_call, matmul, profile = ms.nn.Cell.__call__, ms.ops.matmul, sys.getprofile()

    def fails():
        raise RuntimeError("the port's own failure")

    with pytest.raises(RuntimeError, match="own failure"):
        instrument.observe(fails, X, list)
    assert (ms.nn.Cell.__call__, ms.ops.matmul) == (cell_call, matmul)
    assert sys.getprofile() is profile
    assert "grad" not in vars(instrument.executor()), "the executor's own method is back"
