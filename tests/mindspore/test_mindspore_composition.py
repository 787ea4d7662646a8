"""MindSpore (PyNative) under composition, as measured (MindSpore 2.10): `Cell.recompute()`
(reentrant by default) keeps x and reruns the whole cell in backward (2 matmuls); inside an
outer cell marked `recompute()`, or under a trainer's `mindspore.recompute`, it still keeps x
but reruns 4: the outer `_RecomputeCell.bprop` reruns the inner recomputed cell's forward,
whose own bprop reruns the block again (a documented degradation)."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking import composition as records
from implementations.composition import CASES, Nesting
from implementations.stacks.mindspore import ms, observed
from implementations.stacks.mindspore.mindspore import MindSpore
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
#: Measured: kept roles, forward matmuls, forward matmuls again in backward.
ROWS = {"once": (["x"], 2, 2), "twice": (["x"], 2, 4), "under_trainer": (["x"], 2, 4)}


def _records(case):
    port = MindSpore()
    return (
        port.backward_record(PARAMS, X, checkpoint=Nesting(case)),
        port.backward_record(PARAMS, X, checkpoint=False),
    )


def _matmuls(checkpoint):
    """The instrument's matmul count on the port's own vjp: (forward pass, inside backward)."""
    port, ones, count = MindSpore(), np.ones(4, np.float32), observed.MatmulCount()
    with count.counting():
        port.vjp(PARAMS, X, ones, checkpoint=checkpoint)
    return count.forward, count.backward


@pytest.mark.parametrize("case", CASES)
def test_each_case_keeps_x_and_reruns_as_measured(case):
    record, plain = _records(case)
    assert (sorted(record.saved_roles), record.forward_matmuls) == ROWS[case][:2]
    assert _matmuls(Nesting(case)) == (ROWS[case][1], ROWS[case][2])
    assert record.backward_matmuls is None  # the gradient's own kernels are not counted
    assert (
        records.check_record(MindSpore(), case, record, plain)["saved_bytes"] == 12
    )  # x, (3,) f32


def test_the_plain_backward_pass_reruns_no_forward_matmul():
    plain = MindSpore().backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, None)
    assert _matmuls(False) == (2, 0)
    assert sorted(plain.saved_roles) == ["a", "x"]


def test_the_nested_recompute_reruns_the_cells_once_per_level():
    # The leaf cells run in the backward pass tell the same story as the matmul count.
    assert _records("once")[0].recomputed == {"Affine": 2, "ReLU": 1}
    assert _records("twice")[0].recomputed == {"Affine": 4, "ReLU": 2}
    assert _records("under_trainer")[0].recomputed == {"Affine": 4, "ReLU": 2}


def test_the_instrument_puts_the_functional_and_the_executor_back():
    from implementations.stacks.mindspore.observed import _executor

    matmul, grad = ms.ops.matmul, _executor().grad
    _records("twice")
    assert ms.ops.matmul is matmul
    assert _executor().grad == grad


def test_the_values_do_not_change_under_composition():
    port, cotangent = MindSpore(), np.linspace(-1, 1, 4).astype(np.float32)
    once = port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict()
    for case in CASES:
        grads = port.vjp(PARAMS, X, cotangent, checkpoint=Nesting(case)).as_dict()
        out = port.forward(PARAMS, X, checkpoint=Nesting(case))
        np.testing.assert_array_equal(out, port.forward(PARAMS, X, checkpoint=True))
        for name, value in grads.items():
            np.testing.assert_array_equal(value, once[name])


def test_an_undeclared_case_is_refused_by_name():
    class Once(MindSpore):
        name = "mindspore_once"
        compositions = {"once": "Cell.recompute()"}  # noqa: RUF012
        not_composable = {"twice": "never nested", "under_trainer": "no trainer"}  # noqa: RUF012

    with pytest.raises(ValueError, match=r"checkpoint=twice: port mindspore_once .*never nested"):
        Once().vjp(PARAMS, X, np.ones(4, np.float32), checkpoint=Nesting("twice"))
