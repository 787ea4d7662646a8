"""One path on the FSDP2 port: its values and its evidence both come from the ranks, so a value
method overridden in the controller (where no rank's instrument can see it) is refused when the
class is made, naming what to override instead; a subclass that overrides `checkpointed`, which
the values and the evidence both read, is made. No rank is started here."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.contract import Grads
from implementations.stacks.base import unobserved_overrides
from implementations.stacks.torch.torch_fsdp import TorchFsdp
from implementations.stacks.torch.torch_fsdp_mutants import FsdpNoCheckpoint


def test_a_controller_side_vjp_is_refused_naming_what_to_override():
    with pytest.raises(TypeError) as refused:

        class OwnVjp(TorchFsdp):
            name = "fsdp_own_vjp"

            def vjp(self, params, x, cotangent, *, checkpoint=True):
                return Grads(*(np.zeros(1, np.float32) for _ in range(5)))

    message = str(refused.value)
    assert "overrides vjp" in message
    assert "backward_record" in message
    assert "override checkpointed (whether the ranks checkpoint" in message


def test_a_controller_side_exercise_is_refused():
    with pytest.raises(TypeError, match=r"overrides nn_checkpoint_forward.*exercise_record"):

        class OwnExercise(TorchFsdp):
            name = "fsdp_own_exercise"

            def nn_checkpoint_forward(self, seed, x, features):
                return None


def test_the_switch_both_paths_read_may_be_overridden():
    assert unobserved_overrides(FsdpNoCheckpoint) == []
    assert FsdpNoCheckpoint().checkpointed(True) is False
