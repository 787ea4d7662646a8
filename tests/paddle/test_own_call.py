"""The Paddle base reads its evidence off the port's own call (`observed`), never off a model
of its own: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never recompute has
the right values and fails (e), while the base's model still recomputes."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.stacks.paddle import observed
from implementations.stacks.paddle.loaded import paddle
from implementations.stacks.paddle.paddle import Paddle
from implementations.stacks.paddle.paddle_mutants import OwnModelWithoutRecompute
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_model_mutant_has_the_right_values():
    port, mutant = Paddle(), OwnModelWithoutRecompute()
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
    ours, theirs = mutant.vjp(PARAMS, X, cotangent), port.vjp(PARAMS, X, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        mutant.nn_checkpoint_forward(3, X, 4).numpy(),
        port.nn_checkpoint_forward(3, X, 4).numpy(),
        rtol=1e-6,
    )


def test_property_e_kills_the_own_model_mutant_and_passes_the_port():
    assert MUTANTS["paddle_own_model_no_recompute"].killed_by == "e_evidence"
    mutant = load("paddle_own_model_no_recompute").port
    with pytest.raises(ConformanceError, match=r"saves 1 activation.*output of ReluGradNode"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(Paddle(), None, (_Case(), 3))


def test_the_exercise_record_observes_the_port_s_own_exercise():
    class OwnExerciseOnly(Paddle):
        name = "own_exercise_only"
        nn_checkpoint_forward = OwnModelWithoutRecompute.nn_checkpoint_forward

    record = OwnExerciseOnly().exercise_record(3, X, 4)
    assert [t.origin for t in record.saved_by_origin("activation")] == ["activation"]
    assert {t.origin for t in record.saved} == {"input", "parameter", "activation"}
    assert record.recomputed == {}
    checked = Paddle().exercise_record(3, X, 4)
    assert checked.saved_roles == {"x"}
    assert checked.recomputed == {"Linear": 2, "ReLU": 1}


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

    record = observed.observe(call, X, lambda: PARAMS.as_dict().values())
    assert [t.origin for t in record.saved] == ["activation"], record.saved


def test_the_watch_comes_off_after_the_call_even_when_it_fails():
    entries = [getattr(paddle.base.core.eager, n) for n in observed.ENGINE]
    layer_call = paddle.nn.Layer.__call__

    def fails():
        raise RuntimeError("the port's own failure")

    with pytest.raises(RuntimeError, match="own failure"):
        observed.observe(fails, X, list)
    assert [getattr(paddle.base.core.eager, n) for n in observed.ENGINE] == entries
    assert paddle.nn.Layer.__call__ is layer_call
