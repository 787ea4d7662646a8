"""A port under composition (`implementations.composition`), as measured: the tests each stack
shares, written once (the pattern of `tests.support.stack_kit`).

- `CompositionKit`: the values do not change under any case.
- `MeasuredRowsKit`: each case's record against its measured row (kept roles, forward
  matmuls, matmuls run again in backward, regions entered) (autograd, TensorFlow, MLX,
  DeepSpeed).
- `CountedRowsKit`: the same against the instrument's own matmul count, for a stack whose
  record counts no backward kernel (MindSpore, Paddle).
- `UndeclaredCaseKit`: a port declaring one case refuses another by name.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from conformance.checking.properties import k_composition as records
from implementations.composition import CASES, Nesting
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
#: What the record of x alone, (3,) float32, weighs.
X_BYTES = 12


def records_of(port: Any, case: str) -> tuple[Any, Any]:
    """`port`'s backward records under `case`, then with no checkpoint."""
    return (
        port.backward_record(PARAMS, X, checkpoint=Nesting(case)),
        port.backward_record(PARAMS, X, checkpoint=False),
    )


class CompositionKit:
    """A subclass sets `PORT`, the port's class."""

    PORT: type

    def test_the_values_do_not_change_under_composition(self):
        port, cotangent = self.PORT(), np.linspace(-1, 1, 4).astype(np.float32)
        once = port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict()
        forward = port.forward(PARAMS, X, checkpoint=True)
        for case in CASES:
            out = port.forward(PARAMS, X, checkpoint=Nesting(case))
            np.testing.assert_array_equal(out, forward)
            grads = port.vjp(PARAMS, X, cotangent, checkpoint=Nesting(case)).as_dict()
            for name, value in grads.items():
                np.testing.assert_array_equal(value, once[name])


class MeasuredRowsKit(CompositionKit):
    """A subclass sets `MEASURED`: case -> (kept roles, forward matmuls, matmuls run again in
    backward, regions entered), as measured."""

    MEASURED: ClassVar[dict[str, tuple]]

    @pytest.mark.parametrize("case", CASES)
    def test_each_case_keeps_x_and_reruns_as_measured(self, case):
        port = self.PORT()
        record, plain = records_of(port, case)
        reruns = records.rerun_matmuls(record, plain)
        row = (sorted(record.saved_roles), record.forward_matmuls, reruns)
        assert (*row, record.checkpoint_regions) == self.MEASURED[case]
        checked = records.check_record(port, case, record, plain)
        assert checked["rerun_matmuls"] == self.MEASURED[case][2]
        assert checked["saved_bytes"] == X_BYTES


class CountedRowsKit(CompositionKit):
    """A subclass sets `ROWS` (case -> kept roles, forward matmuls, forward matmuls again in
    backward, as measured) and defines `matmuls(checkpoint)` (static): the instrument's matmul
    count on the port's own vjp, (forward pass, inside backward)."""

    ROWS: ClassVar[dict[str, tuple]]

    @staticmethod
    def matmuls(checkpoint) -> tuple[int, int]:
        raise NotImplementedError

    @pytest.mark.parametrize("case", CASES)
    def test_each_case_keeps_x_and_reruns_as_measured(self, case):
        record, plain = records_of(self.PORT(), case)
        assert (sorted(record.saved_roles), record.forward_matmuls) == self.ROWS[case][:2]
        assert self.matmuls(Nesting(case)) == (self.ROWS[case][1], self.ROWS[case][2])
        assert record.backward_matmuls is None  # the gradient's own kernels are not counted
        checked = records.check_record(self.PORT(), case, record, plain)
        assert checked["saved_bytes"] == X_BYTES

    def test_the_plain_backward_pass_reruns_no_forward_matmul(self):
        plain = self.PORT().backward_record(PARAMS, X, checkpoint=False)
        assert (plain.forward_matmuls, plain.backward_matmuls) == (2, None)
        assert self.matmuls(False) == (2, 0)
        assert sorted(plain.saved_roles) == ["a", "x"]


class UndeclaredCaseKit:
    """A subclass sets `PORT` and `ONCE` (how the port composes once, its words)."""

    PORT: type
    ONCE: ClassVar[str]

    def test_an_undeclared_case_is_refused_by_name(self):
        body = {
            "name": f"{self.PORT.name}_once",
            "compositions": {"once": self.ONCE},
            "not_composable": {"twice": "never nested", "under_trainer": "no trainer"},
        }
        once = type("Once", (self.PORT,), body)()
        refusal = rf"checkpoint=twice: port {self.PORT.name}_once .*never nested"
        with pytest.raises(ValueError, match=refusal):
            once.vjp(PARAMS, X, np.ones(4, np.float32), checkpoint=Nesting("twice"))
