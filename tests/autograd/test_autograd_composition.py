"""HIPS autograd under composition, as measured (autograd 1.9.1, the port's deferred
checkpoint, `remat.checkpoint`): once keeps x and its VJP traces the block again (2 dots);
wrapped twice, or under a trainer's checkpoint over the model's call, the outer VJP runs the
inner primitive's forward for nothing before the inner VJP traces the block again (4 dots: a
documented degradation). The values do not change."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking import composition as records
from implementations.composition import CASES, Nesting
from implementations.stacks.autograd.hips_autograd import HipsAutograd
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
#: case -> (kept roles, forward matmuls, matmuls run again in backward, regions entered)
MEASURED = {
    "once": (["x"], 2, 2, 1),
    "twice": (["x"], 2, 4, 2),
    "under_trainer": (["x"], 2, 4, 2),
}


def _row(port, case):
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    reruns = records.rerun_matmuls(record, plain)
    return sorted(record.saved_roles), record.forward_matmuls, reruns, record.checkpoint_regions


@pytest.mark.parametrize("case", CASES)
def test_each_case_keeps_x_and_reruns_as_measured(case):
    port = HipsAutograd()
    assert _row(port, case) == MEASURED[case]
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    assert records.check_record(port, case, record, plain)["rerun_matmuls"] == MEASURED[case][2]


def test_the_plain_block_runs_two_matmuls_forward_and_four_backward():
    plain = HipsAutograd().backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, 4)  # dW1, dx, dW2, da


def test_the_values_do_not_change_under_composition():
    port, cotangent = HipsAutograd(), np.linspace(-1, 1, 4).astype(np.float32)
    once = port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict()
    forward = port.forward(PARAMS, X, checkpoint=True)
    for case in CASES:
        np.testing.assert_array_equal(port.forward(PARAMS, X, checkpoint=Nesting(case)), forward)
        grads = port.vjp(PARAMS, X, cotangent, checkpoint=Nesting(case)).as_dict()
        for name, value in grads.items():
            np.testing.assert_array_equal(value, once[name])
