"""The MindSpore base reads its evidence off the port's own call (`observed`), never off a cell
of its own: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never recompute has
the right values and fails (e), while the base's cell still recomputes."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.stacks.mindspore import ms, observed
from implementations.stacks.mindspore.mindspore import MindSpore
from implementations.stacks.mindspore.mindspore_mutants import OwnModelWithoutRecompute
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_model_mutant_has_the_right_values():
    port, mutant = MindSpore(), OwnModelWithoutRecompute()
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
    ours, theirs = mutant.vjp(PARAMS, X, cotangent), port.vjp(PARAMS, X, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        mutant.nn_checkpoint_forward(3, X, 4).asnumpy(),
        port.nn_checkpoint_forward(3, X, 4).asnumpy(),
        rtol=1e-6,
    )


def test_property_e_kills_the_own_model_mutant_and_passes_the_port():
    assert MUTANTS["mindspore_own_model_no_recompute"].killed_by == "e_evidence"
    mutant = load("mindspore_own_model_no_recompute").port
    with pytest.raises(ConformanceError, match=r"saves 1 activation.*\(4,\) float32"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(MindSpore(), None, (_Case(), 3))


def test_the_exercise_record_observes_the_port_s_own_exercise():
    class OwnExerciseOnly(MindSpore):
        name = "own_exercise_only"
        nn_checkpoint_forward = OwnModelWithoutRecompute.nn_checkpoint_forward

    record = OwnExerciseOnly().exercise_record(3, X, 4)
    assert [t.shape for t in record.saved_by_origin("activation")] == [(4,)]
    assert record.recomputed == {}
    checked = MindSpore().exercise_record(3, X, 4)
    assert checked.saved_roles == {"x"}
    assert checked.recomputed == {"Affine": 2, "ReLU": 1}


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
    cell_call = ms.nn.Cell.__call__

    def fails():
        raise RuntimeError("the port's own failure")

    with pytest.raises(RuntimeError, match="own failure"):
        observed.observe(fails, X, list)
    assert ms.nn.Cell.__call__ is cell_call
    assert "grad" not in vars(observed._executor()), "the executor's own method is back"
