"""The DeepSpeed port reads its evidence off its own call (`reentrant.observe`), never off a
second model: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint
has the right values and fails (e), while the base's model still goes through DeepSpeed's
checkpoint; what DeepSpeed keeps on its node, out of the hooks' sight, is read as kept."""

from __future__ import annotations

import pytest
import torch

from implementations.stacks.deepspeed.deepspeed import DeepSpeed
from implementations.stacks.deepspeed.deepspeed_mutants import OwnModelWithoutCheckpoint
from implementations.stacks.torch import reentrant
from tests.support.own_call_kit import PARAMS, OwnCallKit, X


class TestOwnCall(OwnCallKit):
    PORT, MUTANT = DeepSpeed, OwnModelWithoutCheckpoint
    MUTANT_NAME = "deepspeed_own_model_no_checkpoint"
    KILLED_WITH = r"saves 1 activation.*\ba: output of Relu"

    @staticmethod
    def native(out):
        return out.detach().numpy()


def test_the_records_read_what_the_checkpoint_node_keeps_and_count_its_regions():
    on = DeepSpeed().backward_record(PARAMS, X, checkpoint=True)
    assert [(t.origin, t.role) for t in on.saved] == [("input", "x")]
    assert "kept on the checkpoint node" in on.saved[0].note
    assert on.checkpoint_regions == 1
    assert on.backward_matmuls == 6
    off = DeepSpeed().backward_record(PARAMS, X, checkpoint=False)
    assert off.checkpoint_regions == 0
    assert off.saved_roles == {"x", "a"}


def test_the_watch_comes_off_after_the_call_even_when_it_fails():
    backward, grad = torch.autograd.backward, torch.autograd.grad

    def fails():
        raise RuntimeError("the port's own failure")

    with pytest.raises(RuntimeError, match="own failure"):
        reentrant.observe(fails, X, "CheckpointFunctionBackward")
    assert (torch.autograd.backward, torch.autograd.grad) == (backward, grad)
