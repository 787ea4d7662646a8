"""The MLX base reads its evidence off the port's own graphs (`pullback`, which `vjp`
evaluates; `nn_checkpoint_forward`, lazy), never off a second model: a port whose own
`forward`, `pullback` and `nn_checkpoint_forward` never checkpoint has the right values and
fails (e), while the base's module still checkpoints. `vjp` returns evaluated numpy (the graph
is freed): a port that overrides it is refused when its class is made."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.stacks.mlx import mlx as port_module
from implementations.stacks.mlx import to_host_array
from implementations.stacks.mlx.mlx import Mlx
from implementations.stacks.mlx.mlx_mutants import OwnModelWithoutCheckpoint
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_model_mutant_has_the_right_values():
    port, mutant = Mlx(), OwnModelWithoutCheckpoint()
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
    ours, theirs = mutant.vjp(PARAMS, X, cotangent), port.vjp(PARAMS, X, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        to_host_array(mutant.nn_checkpoint_forward(3, X, 4)),
        to_host_array(port.nn_checkpoint_forward(3, X, 4)),
        rtol=1e-6,
    )


def test_property_e_kills_the_own_model_mutant_and_passes_the_port():
    assert MUTANTS["mlx_own_model_no_checkpoint"].killed_by == "e_evidence"
    mutant = load("mlx_own_model_no_checkpoint").port
    with pytest.raises(ConformanceError, match=r"VJP with checkpoint on: saves \d activation"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(Mlx(), None, (_Case(), 3))


def test_the_exercise_record_observes_the_port_s_own_exercise():
    class OwnExerciseOnly(Mlx):
        name = "own_exercise_only"
        nn_checkpoint_forward = OwnModelWithoutCheckpoint.nn_checkpoint_forward

    with pytest.raises(ConformanceError, match=r"grad of nn_checkpoint_forward: saves"):
        check_evidence(OwnExerciseOnly(), None, (_Case(), 3))
    record = OwnExerciseOnly().exercise_record(3, X, 4)
    assert record.recomputed == {}
    assert record.checkpoint_regions == 0
    checked = Mlx().exercise_record(3, X, 4)
    assert checked.saved_roles == {"x"}
    assert checked.checkpoint_regions == 1


def test_the_port_s_own_exercise_names_its_arrays_for_the_record_only():
    """The record's tap reaches the port's `nn_checkpoint_forward` (shapes and roles: the
    export has none), and is gone after it."""
    off = load("mlx_no_checkpoint").port.exercise_record(3, X, 4)
    assert {t.role for t in off.saved_by_origin("activation")} == {"h"}  # relu's VJP reads h
    assert all(t.shape == (4,) for t in off.saved_by_origin("activation"))
    assert port_module.active_tap() is port_module.no_tap


def test_a_port_overriding_vjp_is_refused_naming_what_to_override():
    with pytest.raises(TypeError) as refused:

        class OwnVjp(Mlx):
            name = "own_vjp"

            def vjp(self, params, x, cotangent, *, checkpoint=True):
                return OwnModelWithoutCheckpoint().vjp(params, x, cotangent)

    message = str(refused.value)
    assert "overrides vjp" in message
    assert "backward_record" in message
    assert "override pullback (or mlp, the module class it builds) instead" in message
