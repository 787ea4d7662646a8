"""A port reads its evidence off its own call, never off a second model: the tests each stack
with such an instrument shares, written once (the pattern of `tests.support.stack_kit`).

`OwnCallKit`: a mutant whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint
has the port's values, and property (e) kills it naming what it keeps, while the real port
passes; a port whose exercise alone is the mutant's is seen by its exercise record.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties.e_evidence import check_evidence
from conformance.mutants import MUTANTS, load
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


class OwnCallKit:
    """A subclass sets `PORT` (the port's class), `MUTANT` (its own-model mutant's class),
    `MUTANT_NAME` (the mutant's name in `conformance.mutants`) and `KILLED_WITH` (a regex of
    what (e) says killing it), and `native` (the framework's array as numpy, static).

    `check_own_exercise(port)` checks a port whose `nn_checkpoint_forward` alone is the
    mutant's, `check_port_exercise(record)` the real port's exercise record; their defaults
    hold for a stack that names relu's output `a` and counts its checkpoint regions.
    """

    PORT: type
    MUTANT: type
    MUTANT_NAME: ClassVar[str]
    KILLED_WITH: ClassVar[str]

    @staticmethod
    def native(out: Any) -> np.ndarray:
        return np.asarray(out)

    def test_the_own_model_mutant_has_the_right_values(self):
        port, mutant = self.PORT(), self.MUTANT()
        cotangent = np.linspace(-1, 1, 4).astype(np.float32)
        np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
        ours, theirs = mutant.vjp(PARAMS, X, cotangent), port.vjp(PARAMS, X, cotangent)
        for name, value in ours.as_dict().items():
            np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(
            self.native(mutant.nn_checkpoint_forward(3, X, 4)),
            self.native(port.nn_checkpoint_forward(3, X, 4)),
            rtol=1e-6,
        )

    def test_property_e_kills_the_own_model_mutant_and_passes_the_port(self):
        assert MUTANTS[self.MUTANT_NAME].killed_by == "e_evidence"
        mutant = load(self.MUTANT_NAME).port
        with pytest.raises(ConformanceError, match=self.KILLED_WITH):
            check_evidence(mutant, None, (Case(), 3))
        check_evidence(self.PORT(), None, (Case(), 3))

    def own_exercise_only(self) -> Any:
        """The port, but for its `nn_checkpoint_forward`: the mutant's."""
        body = {
            "name": "own_exercise_only",
            "nn_checkpoint_forward": self.MUTANT.nn_checkpoint_forward,
        }
        return type("OwnExerciseOnly", (self.PORT,), body)()

    def check_own_exercise(self, port: Any) -> None:
        record = port.exercise_record(3, X, 4)
        assert {t.role for t in record.saved_by_origin("activation")} == {"a"}
        assert record.recomputed == {}
        assert record.checkpoint_regions == 0

    def check_port_exercise(self, record: Any) -> None:
        assert record.saved_roles == {"x"}
        assert record.checkpoint_regions == 1

    def test_the_exercise_record_observes_the_port_s_own_exercise(self):
        self.check_own_exercise(self.own_exercise_only())
        self.check_port_exercise(self.PORT().exercise_record(3, X, 4))


class OriginsFollowXKit:
    """A port (`PORT`, its class) whose record, with the checkpoint off, tells x, the kernels
    and relu's output `a` apart whatever x's values, and with it on keeps the block's inputs."""

    PORT: type

    @pytest.mark.parametrize("x", [X, np.zeros(3, np.float32)], ids=["x", "zeros"])
    def test_origins_follow_the_data_from_x(self, x):
        port = self.PORT()
        off = port.backward_record(PARAMS, x, checkpoint=False)
        assert {(t.origin, t.role) for t in off.saved} == {
            ("input", "x"),
            ("parameter", ""),
            ("activation", "a"),
        }
        on = port.backward_record(PARAMS, x, checkpoint=True)
        assert {t.origin for t in on.saved} == {"input", "parameter"}
        assert on.saved_roles == {"x"}
