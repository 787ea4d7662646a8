"""The Paddle base reads its evidence off the port's own call (`instrument.observe`), never off a
model of its own: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never recompute
has the right values and fails (e), while the base's model still recomputes."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.stacks.paddle import instrument
from implementations.stacks.paddle.loaded import paddle
from implementations.stacks.paddle.paddle import Paddle
from implementations.stacks.paddle.paddle_mutants import OwnModelWithoutRecompute
from tests.support.own_call_kit import PARAMS, OwnCallKit, X


class TestOwnCall(OwnCallKit):
    PORT, MUTANT = Paddle, OwnModelWithoutRecompute
    MUTANT_NAME = "paddle_own_model_no_recompute"
    KILLED_WITH = r"saves 1 activation.*output of ReluGradNode"

    @staticmethod
    def native(out):
        return out.numpy()

    def check_own_exercise(self, port):
        record = port.exercise_record(3, X, 4)
        assert [t.origin for t in record.saved_by_origin("activation")] == ["activation"]
        assert {t.origin for t in record.saved} == {"input", "parameter", "activation"}
        assert record.recomputed == {}

    def check_port_exercise(self, record):
        assert record.saved_roles == {"x"}
        assert record.recomputed == {"Linear": 2, "ReLU": 1}


@pytest.mark.parametrize("x", [X, np.zeros(3, np.float32)], ids=["x", "zeros"])
def test_origins_are_told_by_values_and_by_the_graph(x):
    """With the recompute off, x (a copy of the caller's, as the port makes it) is the input,
    the kernels parameters, relu's output an activation named a, whatever x's values."""
    off = Paddle().backward_record(PARAMS, x, checkpoint=False)
    assert sorted((t.origin, t.role, t.shape) for t in off.saved) == [
        ("activation", "a", (4,)),
        ("input", "x", (3,)),
        ("parameter", "", (3, 4)),
        ("parameter", "", (4, 4)),
    ]


def test_a_kept_leaf_that_is_neither_x_nor_a_parameter_is_an_activation():
    """A tensor kept out of the graph (detached: a leaf) is told by its values, not by being a
    leaf: one that is neither x nor a parameter counts as an activation."""

    def call():
        x = paddle.to_tensor(X, stop_gradient=False)
        hidden = paddle.nn.functional.relu(x * 2.0).detach()  # a leaf, x's values doubled
        hidden.stop_gradient = False
        (hidden * hidden).sum().backward()

    record = instrument.observe(call, X, lambda: PARAMS.as_dict().values())
    assert [t.origin for t in record.saved] == ["activation"], record.saved


def test_the_watch_comes_off_after_the_call_even_when_it_fails():
    entries = [getattr(paddle.base.core.eager, n) for n in instrument.ENGINE]
    layer_call = paddle.nn.Layer.__call__

    def fails():
        raise RuntimeError("the port's own failure")

    with pytest.raises(RuntimeError, match="own failure"):
        instrument.observe(fails, X, list)
    assert [getattr(paddle.base.core.eager, n) for n in instrument.ENGINE] == entries
    assert paddle.nn.Layer.__call__ is layer_call
