"""MLX under composition, as measured (mlx 0.32.4, the lazy graph of the port's own
pullback): once keeps x and its lazy recompute keeps only fc1's AddMM (relu's mask); wrapped
twice, or under a trainer's checkpoint over the model's call, the outer recompute reruns the
inner region whole, because the inner VJP's `depends(primals, outputs)` waits on its outputs,
before the inner reruns fc1 (3 matmuls: a documented degradation). Each nested case enters two
regions. The values do not change."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking import composition as records
from implementations.composition import CASES, Nesting
from implementations.stacks.mlx.mlx import Mlx
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
#: case -> (kept roles, forward matmuls, matmuls run again in backward, regions entered)
MEASURED = {
    "once": (["x"], 2, 1, 1),
    "twice": (["x"], 2, 3, 2),
    "under_trainer": (["x"], 2, 3, 2),
}


def _row(port, case):
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    reruns = records.rerun_matmuls(record, plain)
    return sorted(record.saved_roles), record.forward_matmuls, reruns, record.checkpoint_regions


@pytest.mark.parametrize("case", CASES)
def test_each_case_keeps_x_and_reruns_as_measured(case):
    port = Mlx()
    assert _row(port, case) == MEASURED[case]
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    assert records.check_record(port, case, record, plain)["rerun_matmuls"] == MEASURED[case][2]


def test_the_plain_block_runs_two_matmuls_forward_and_four_backward():
    plain = Mlx().backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, 4)  # dW1, dx, dW2, da: Matmul


def test_the_values_do_not_change_under_composition():
    port, cotangent = Mlx(), np.linspace(-1, 1, 4).astype(np.float32)
    once = port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict()
    forward = port.forward(PARAMS, X, checkpoint=True)
    for case in CASES:
        np.testing.assert_array_equal(port.forward(PARAMS, X, checkpoint=Nesting(case)), forward)
        grads = port.vjp(PARAMS, X, cotangent, checkpoint=Nesting(case)).as_dict()
        for name, value in grads.items():
            np.testing.assert_array_equal(value, once[name])
