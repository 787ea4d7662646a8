"""Eager torch under composition, as measured (torch 2.13): a non-reentrant checkpoint wrapped
twice, or under a trainer's region, keeps x and reruns x @ W1 once, as one region does (its
recompute stops early: "NOTE [Nestable Checkpoint]"); with the early stop off the nested
regions rerun the block in full, each. A case the port does not declare is refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from torch.utils.checkpoint import set_checkpoint_early_stop

from conformance.checking.properties import k_composition as records
from implementations.composition import CASES, Nesting
from implementations.stacks.torch.pytorch import PyTorch
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)


def _row(port, case):
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    return sorted(record.saved_roles), record.forward_matmuls, records.rerun_matmuls(record, plain)


@pytest.mark.parametrize("case", CASES)
def test_each_case_keeps_x_and_reruns_the_first_matmul_once(case):
    assert _row(PyTorch(), case) == (["x"], 2, 1)
    assert records.check_record(PyTorch(), case, *_records(case))["rerun_matmuls"] == 1


def _records(case):
    port = PyTorch()
    return (
        port.backward_record(PARAMS, X, checkpoint=Nesting(case)),
        port.backward_record(PARAMS, X, checkpoint=False),
    )


def test_without_the_early_stop_twice_reruns_the_block_for_each_region():
    # The upstream switch that the early stop replaces: what "for nothing" would cost.
    with set_checkpoint_early_stop(False):
        assert _row(PyTorch(), "once") == (["x"], 2, 2)
        assert _row(PyTorch(), "twice") == (["x"], 2, 4)


def test_the_values_do_not_change_under_composition():
    port, cotangent = PyTorch(), np.linspace(-1, 1, 4).astype(np.float32)
    once = port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict()
    for case in CASES:
        grads = port.vjp(PARAMS, X, cotangent, checkpoint=Nesting(case)).as_dict()
        for name, value in grads.items():
            np.testing.assert_array_equal(value, once[name])


def test_a_port_that_declares_no_case_refuses_it_by_name():
    class Plain(PyTorch):
        name = "plain"
        compositions = {"once": "checkpoint(block, x)"}  # noqa: RUF012
        not_composable = {"twice": "its trainer never nests", "under_trainer": "no trainer"}  # noqa: RUF012

    with pytest.raises(ValueError, match=r"checkpoint=twice: port plain .*never nests"):
        Plain().vjp(PARAMS, X, np.ones(4, np.float32), checkpoint=Nesting("twice"))
    assert records.not_expressible(Plain()) == (
        "not expressible: twice: its trainer never nests; under_trainer: no trainer"
    )
    assert records.not_expressible(PyTorch()) is None  # it declares both nested cases


def test_a_nesting_flattened_to_one_region_fails_k_even_when_it_keeps_the_same():
    """The inner region dropped, the outer alone run: the same kept set and reruns as once,
    and one region entered (as tfjs does): (k) says the inner region was dropped."""
    from conformance.checking.checks import ConformanceError

    port = PyTorch()
    flat = port.backward_record(PARAMS, X, checkpoint=Nesting("once"))
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    assert flat.checkpoint_regions == 1
    with pytest.raises(ConformanceError, match=r"1 checkpoint region.*inner region was dropped"):
        records.check_record(port, "twice", flat, plain)


def test_compare_s_composition_matrix_shows_each_case_and_fails_a_broken_one():
    from conformance.comparison import composition_matrix
    from conformance.mutants import load
    from conformance.tables.kinds import compare_matrices

    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    port = PyTorch()
    reference = {
        "output": port.forward(PARAMS, X, checkpoint=True),
        "grads": port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict(),
    }
    cells = composition_matrix.measure(port, reference, PARAMS, X, cotangent)
    assert [(c.case, c.roles, c.forward_matmuls, c.rerun_matmuls) for c in cells] == [
        (case, ["x"], 2, 1) for case in CASES
    ]
    assert not any(composition_matrix.failed(c) for c in cells)
    assert cells[1].declared_by == "the suite (torch)"
    assert cells[1].measured_by == "suite"
    dropped = load("composed_second_wrap_drops_region").port
    broken = composition_matrix.measure(dropped, reference, PARAMS, X, cotangent)
    assert [composition_matrix.failed(c) for c in broken] == [False, True, True]
    assert "0 checkpoint region(s): the inner region was dropped" in broken[1].expected

    class Row:
        name, compositions = "pytorch", cells

    table = compare_matrices.composition_table([Row()])
    texts = [[cell.text for cell in row.cells] for row in table.rows]
    assert ["twice", "{x}", "2", "1", "equal", "as declared"] in texts
