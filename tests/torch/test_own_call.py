"""The torch base reads its evidence off the port's own call (`observed`), never off a second
model: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint has the
right values and fails (e), while the base's model still checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.contract import MEASURED_BY_SUITE
from implementations.policies import Policy
from implementations.stacks.torch.pytorch import PyTorch
from implementations.stacks.torch.pytorch_mutants import OwnModelWithoutCheckpoint
from tests.support.own_call_kit import PARAMS, OwnCallKit, X


class TestOwnCall(OwnCallKit):
    PORT, MUTANT = PyTorch, OwnModelWithoutCheckpoint
    MUTANT_NAME = "pytorch_own_model_no_checkpoint"
    KILLED_WITH = r"saves 1 activation.*\ba: output of Relu"

    @staticmethod
    def native(out):
        return out.detach().numpy()

    def check_own_exercise(self, port):
        record = port.exercise_record(3, X, 4)
        assert {t.role for t in record.saved_by_origin("activation")} == {"a"}
        assert record.recomputed == {}
        assert record.checkpoint_regions is None

    def check_port_exercise(self, record):
        assert record.saved_roles == {"x"}
        assert record.checkpoint_regions == 1


@pytest.mark.parametrize("x", [X, np.zeros(3, np.float32)], ids=["x", "zeros"])
def test_origins_follow_the_data_from_x(x):
    """With the checkpoint off, x (a copy of the caller's, as the port makes it) is the input,
    the weights as saved (transposed views) are parameters, relu's output an activation;
    under save_dots the cache's h and y are activations, whatever x's values."""
    port = PyTorch()
    off = port.backward_record(PARAMS, x, checkpoint=False)
    assert {(t.origin, t.role) for t in off.saved} == {
        ("input", "x"),
        ("parameter", ""),
        ("activation", "a"),
    }
    dots = port.backward_record(PARAMS, x, checkpoint=Policy.parse("save_dots"))
    assert dots.saved_roles == {"x", "h", "y"}
    assert dots.measured_by == ""
    assert MEASURED_BY_SUITE == "suite"
