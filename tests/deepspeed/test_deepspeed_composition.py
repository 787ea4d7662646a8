"""DeepSpeed under composition, as measured (deepspeed 0.19.8, torch 2.13): its reentrant
`checkpoint` keeps x and reruns the whole block in backward (2 matmuls); wrapped twice, or
under a trainer's checkpoint over the model's call, it still keeps x but reruns 4: the outer
`CheckpointFunction.backward` reruns the inner checkpoint's forward under enable_grad (its
output is only the inner node's), whose backward reruns the block again (a documented
degradation). The inner region exists in the outer's rerun only: 2 regions."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking import composition as records
from implementations.composition import CASES, Nesting
from implementations.stacks.deepspeed.deepspeed import DeepSpeed
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
#: Measured: kept roles, forward matmuls, forward matmuls again in backward, regions.
ROWS = {"once": (["x"], 2, 2, 1), "twice": (["x"], 2, 4, 2), "under_trainer": (["x"], 2, 4, 2)}


def _records(case):
    port = DeepSpeed()
    return (
        port.backward_record(PARAMS, X, checkpoint=Nesting(case)),
        port.backward_record(PARAMS, X, checkpoint=False),
    )


@pytest.mark.parametrize("case", CASES)
def test_each_case_keeps_x_and_reruns_as_measured(case):
    record, plain = _records(case)
    row = (
        sorted(record.saved_roles),
        record.forward_matmuls,
        records.rerun_matmuls(record, plain),
        record.checkpoint_regions,
    )
    assert row == ROWS[case]
    assert records.check_record(DeepSpeed(), case, record, plain)["saved_bytes"] == 12  # x


def test_the_plain_backward_pass_runs_the_gradients_matmuls_only():
    plain = DeepSpeed().backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls, plain.checkpoint_regions) == (2, 4, 0)


def test_the_values_do_not_change_under_composition():
    port, cotangent = DeepSpeed(), np.linspace(-1, 1, 4).astype(np.float32)
    once = port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict()
    for case in CASES:
        grads = port.vjp(PARAMS, X, cotangent, checkpoint=Nesting(case)).as_dict()
        out = port.forward(PARAMS, X, checkpoint=Nesting(case))
        np.testing.assert_array_equal(out, port.forward(PARAMS, X, checkpoint=True))
        for name, value in grads.items():
            np.testing.assert_array_equal(value, once[name])


def test_an_undeclared_case_is_refused_by_name():
    class Once(DeepSpeed):
        name = "deepspeed_once"
        compositions = {"once": "checkpoint(block, x)"}  # noqa: RUF012
        not_composable = {"twice": "never nested", "under_trainer": "no trainer"}  # noqa: RUF012

    with pytest.raises(ValueError, match=r"checkpoint=twice: port deepspeed_once .*never nested"):
        Once().vjp(PARAMS, X, np.ones(4, np.float32), checkpoint=Nesting("twice"))
