"""torch.compile under composition, as measured (torch 2.13): dynamo keeps a checkpoint nested
in another (a tag_activation_checkpoint inside another's body), but AOTAutograd tags every node
of the nesting with one ac_graph_id, so the partition inductor receives holds one region and is
once's: x kept, x @ W1 rerun once. The port declares the nested cases not composable with that
reason (a flattened nesting fails (k)); a subclass that declares them shows why."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import k_composition as records
from implementations.composition import CASES, NESTED, Nesting, composed
from implementations.stacks.torch.torch_compile import TorchCompile
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)


class DeclaresNesting(TorchCompile):
    """The port with the nested cases declared: what its compiled partition then shows."""

    name = "torch_compile_nesting"
    compositions: ClassVar[dict[str, str]] = {case: "as the eager port" for case in CASES}
    not_composable: ClassVar[dict[str, str]] = {}
    #: What the partition shows, declared as the record has it: (k) still refuses the nesting.
    composition_expectations: ClassVar[dict] = {
        case: composed("x", 2, 1, why="measured: one region, once's") for case in CASES
    }


def _row(port, case):
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    reruns = records.rerun_matmuls(record, plain)
    return sorted(record.saved_roles), record.forward_matmuls, reruns, record.checkpoint_regions


@pytest.mark.parametrize("case", CASES)
def test_every_case_compiles_to_one_region_that_keeps_x_and_reruns_x_at_w1(case):
    assert _row(DeclaresNesting(), case) == (["x"], 2, 1, 1)


def test_the_port_s_once_is_declared_as_its_partition_shows():
    """The port's own table holds once as measured above: compare's cell shows no ✗."""
    table, _whose = records.table_of(TorchCompile())
    expected = table["once"]
    assert (sorted(expected.roles), expected.forward_matmuls, expected.rerun_matmuls) == (
        ["x"],
        2,
        1,
    )
    port = TorchCompile()
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    record = port.backward_record(PARAMS, X, checkpoint=Nesting("once"))
    records.check_record(port, "once", record, plain)  # raises on a contradiction


def test_the_port_declares_the_nested_cases_not_composable_and_k_says_so():
    reason = records.not_expressible(TorchCompile())
    assert reason is not None
    assert "one ac_graph_id" in reason
    with pytest.raises(ValueError, match=r"checkpoint=twice: port torch_compile .*ac_graph_id"):
        TorchCompile().vjp(PARAMS, X, np.ones(4, np.float32), checkpoint=Nesting("twice"))


@pytest.mark.parametrize("case", NESTED)
def test_declared_anyway_the_flattened_nesting_fails_k(case):
    port = DeclaresNesting()
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    with pytest.raises(ConformanceError, match=r"1 checkpoint region.*inner region was dropped"):
        records.check_record(port, case, record, plain)


def test_the_values_do_not_change_under_the_flattened_nesting():
    port, cotangent = DeclaresNesting(), np.linspace(-1, 1, 4).astype(np.float32)
    once = port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict()
    for case in NESTED:
        grads = port.vjp(PARAMS, X, cotangent, checkpoint=Nesting(case)).as_dict()
        for name, value in grads.items():
            np.testing.assert_allclose(value, once[name], rtol=1e-6, atol=1e-7)
