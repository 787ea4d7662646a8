"""The autograd base reads its evidence off the port's own call (`observed`), never off a second
model: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint has the
right values and fails (e), while the base's block still checkpoints."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.stacks.autograd.hips_autograd import HipsAutograd
from implementations.stacks.autograd.hips_autograd_mutants import OwnModelWithoutCheckpoint
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_model_mutant_has_the_right_values():
    port, mutant = HipsAutograd(), OwnModelWithoutCheckpoint()
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
    ours, theirs = mutant.vjp(PARAMS, X, cotangent), port.vjp(PARAMS, X, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        mutant.nn_checkpoint_forward(3, X, 4), port.nn_checkpoint_forward(3, X, 4), rtol=1e-6
    )


def test_property_e_kills_the_own_model_mutant_and_passes_the_port():
    assert MUTANTS["autograd_own_model_no_checkpoint"].killed_by == "e_evidence"
    mutant = load("autograd_own_model_no_checkpoint").port
    with pytest.raises(ConformanceError, match=r"saves 1 activation.*a: output of relu"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(HipsAutograd(), None, (_Case(), 3))


def test_the_exercise_record_observes_the_port_s_own_exercise():
    class OwnExerciseOnly(HipsAutograd):
        name = "own_exercise_only"
        nn_checkpoint_forward = OwnModelWithoutCheckpoint.nn_checkpoint_forward

    record = OwnExerciseOnly().exercise_record(3, X, 4)
    assert {t.role for t in record.saved_by_origin("activation")} == {"a"}
    assert record.recomputed == {}
    assert record.checkpoint_regions == 0
    checked = HipsAutograd().exercise_record(3, X, 4)
    assert checked.saved_roles == {"x"}
    assert checked.checkpoint_regions == 1


@pytest.mark.parametrize("x", [X, np.zeros(3, np.float32)], ids=["x", "zeros"])
def test_origins_follow_the_data_from_x(x):
    """With the checkpoint off, x is the input, the kernels parameters, relu's output the one
    activation (its role a), whatever x's values; with it on, only the block's inputs."""
    port = HipsAutograd()
    off = port.backward_record(PARAMS, x, checkpoint=False)
    assert {(t.origin, t.role) for t in off.saved} == {
        ("input", "x"),
        ("parameter", ""),
        ("activation", "a"),
    }
    on = port.backward_record(PARAMS, x, checkpoint=True)
    assert {t.origin for t in on.saved} == {"input", "parameter"}
    assert on.saved_roles == {"x"}


def test_an_array_made_outside_any_primitive_is_never_taken_for_harmless():
    """The upstream checkpoint's forward traces compute h with plain numpy (no box): the relu
    of it is an activation still, and so is any saved array the call made off the record."""
    record = load("autograd_upstream_checkpoint").port.backward_record(PARAMS, X)
    assert len(record.saved_by_origin("activation")) == 4
    assert not record.saved_by_origin("constant")


def test_the_instrument_puts_back_the_profiler_it_found():
    from implementations.stacks.autograd import observed

    def failing():
        raise RuntimeError("the port's own error")

    before = sys.getprofile()
    HipsAutograd().backward_record(PARAMS, X)
    with pytest.raises(RuntimeError, match="the port's own error"):
        observed.observe(failing, X, ())
    assert sys.getprofile() is before
