"""The DeepSpeed port reads its evidence off its own call (`reentrant.observe`), never off a
second model: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint
has the right values and fails (e), while the base's model still goes through DeepSpeed's
checkpoint; what DeepSpeed keeps on its node, out of the hooks' sight, is read as kept."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.stacks.deepspeed.deepspeed import DeepSpeed
from implementations.stacks.deepspeed.deepspeed_mutants import OwnModelWithoutCheckpoint
from implementations.stacks.torch import reentrant
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_model_mutant_has_the_right_values():
    port, mutant = DeepSpeed(), OwnModelWithoutCheckpoint()
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
    ours, theirs = mutant.vjp(PARAMS, X, cotangent), port.vjp(PARAMS, X, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        mutant.nn_checkpoint_forward(3, X, 4).detach().numpy(),
        port.nn_checkpoint_forward(3, X, 4).detach().numpy(),
        rtol=1e-6,
    )


def test_property_e_kills_the_own_model_mutant_and_passes_the_port():
    assert MUTANTS["deepspeed_own_model_no_checkpoint"].killed_by == "e_evidence"
    mutant = load("deepspeed_own_model_no_checkpoint").port
    with pytest.raises(ConformanceError, match=r"saves 1 activation.*\ba: output of Relu"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(DeepSpeed(), None, (_Case(), 3))


def test_the_records_read_what_the_checkpoint_node_keeps_and_count_its_regions():
    on = DeepSpeed().backward_record(PARAMS, X, checkpoint=True)
    assert [(t.origin, t.role) for t in on.saved] == [("input", "x")]
    assert "kept on the checkpoint node" in on.saved[0].note
    assert on.checkpoint_regions == 1
    assert on.backward_matmuls == 6
    off = DeepSpeed().backward_record(PARAMS, X, checkpoint=False)
    assert off.checkpoint_regions == 0
    assert off.saved_roles == {"x", "a"}


def test_the_exercise_record_observes_the_port_s_own_exercise():
    class OwnExerciseOnly(DeepSpeed):
        name = "own_exercise_only"
        nn_checkpoint_forward = OwnModelWithoutCheckpoint.nn_checkpoint_forward

    record = OwnExerciseOnly().exercise_record(3, X, 4)
    assert {t.role for t in record.saved_by_origin("activation")} == {"a"}
    assert record.recomputed == {}
    assert record.checkpoint_regions == 0
    checked = DeepSpeed().exercise_record(3, X, 4)
    assert checked.saved_roles == {"x"}
    assert checked.checkpoint_regions == 1


def test_the_watch_comes_off_after_the_call_even_when_it_fails():
    backward, grad = torch.autograd.backward, torch.autograd.grad

    def fails():
        raise RuntimeError("the port's own failure")

    with pytest.raises(RuntimeError, match="own failure"):
        reentrant.observe(fails, X, "CheckpointFunctionBackward")
    assert (torch.autograd.backward, torch.autograd.grad) == (backward, grad)
