"""The torch base reads its evidence off the port's own call (`observed`), never off a second
model: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint has the
right values and fails (e), while the base's model still checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.contract import MEASURED_BY_SUITE
from implementations.policies import Policy
from implementations.stacks.torch.pytorch import PyTorch
from implementations.stacks.torch.pytorch_mutants import OwnModelWithoutCheckpoint
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_model_mutant_has_the_right_values():
    port, mutant = PyTorch(), OwnModelWithoutCheckpoint()
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
    assert MUTANTS["pytorch_own_model_no_checkpoint"].killed_by == "e_evidence"
    mutant = load("pytorch_own_model_no_checkpoint").port
    with pytest.raises(ConformanceError, match=r"saves 1 activation.*\ba: output of Relu"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(PyTorch(), None, (_Case(), 3))


def test_the_exercise_record_observes_the_port_s_own_exercise():
    class OwnExerciseOnly(PyTorch):
        name = "own_exercise_only"
        nn_checkpoint_forward = OwnModelWithoutCheckpoint.nn_checkpoint_forward

    record = OwnExerciseOnly().exercise_record(3, X, 4)
    assert {t.role for t in record.saved_by_origin("activation")} == {"a"}
    assert record.recomputed == {} and record.checkpoint_regions is None
    checked = PyTorch().exercise_record(3, X, 4)
    assert checked.saved_roles == {"x"} and checked.checkpoint_regions == 1


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
    assert dots.measured_by == "" and MEASURED_BY_SUITE == "suite"
