"""One path: the evidence (e) reads comes from the call whose values (c) and (f) check.

A base whose record does not run a value method refuses, when the class is made, a port that
overrides that method below the record (its evidence would be read off the base's model while
its values come from the override); a record marked `observes(...)` runs the port's own call,
so an override is welcome there. Framework-free: the ports here are numpy stand-ins.
"""

from __future__ import annotations

import numpy as np
import pytest

from implementations.contract import BackwardRecord
from implementations.stacks import Port, Stack
from implementations.stacks.base import EVIDENCE_OF, observes, unobserved_overrides

STACK = Stack("numpy-test")


class _Base(Port, abstract=True):
    """A base whose records build a model of their own (they never call `vjp`)."""

    stack = STACK
    framework = "numpy-test"
    model_methods = "apply"

    def vjp(self, params, x, cotangent, *, checkpoint=True):
        raise NotImplementedError

    def nn_checkpoint_forward(self, seed, x, features):
        raise NotImplementedError

    def backward_record(self, params, x, *, checkpoint=True):
        return BackwardRecord("stand-in", ())


class _Observing(_Base, abstract=True):
    """The same base, its backward record now running the port's own `vjp`."""

    @observes("vjp")
    def backward_record(self, params, x, *, checkpoint=True):
        self.vjp(params, x, np.ones(1, np.float32), checkpoint=checkpoint)
        return BackwardRecord("stand-in", ())


def test_a_port_overriding_vjp_below_a_record_that_never_runs_it_is_refused():
    with pytest.raises(TypeError) as refused:

        class OwnVjp(_Base):
            name = "own_vjp"

            def vjp(self, params, x, cotangent, *, checkpoint=True):
                return None

    message = str(refused.value)
    assert "overrides vjp" in message
    assert "backward_record" in message
    assert "override apply instead" in message, "it names the method to override"


def test_a_port_overriding_vjp_below_a_record_that_observes_it_is_made():
    class OwnVjp(_Observing):
        name = "own_vjp"

        def vjp(self, params, x, cotangent, *, checkpoint=True):
            return None

    assert unobserved_overrides(OwnVjp) == []


def test_a_port_that_brings_its_own_record_too_is_made():
    class OwnBoth(_Base):
        name = "own_both"

        def vjp(self, params, x, cotangent, *, checkpoint=True):
            return None

        def backward_record(self, params, x, *, checkpoint=True):
            return BackwardRecord("its own", ())

    assert unobserved_overrides(OwnBoth) == []


def test_the_exercise_record_of_the_base_port_observes_the_exercise():
    # `Port.exercise_record` traces the port's own `nn_checkpoint_forward`.
    assert Port.exercise_record.observes == "nn_checkpoint_forward"

    class OwnExercise(_Base):
        name = "own_exercise"

        def nn_checkpoint_forward(self, seed, x, features):
            return None

    assert unobserved_overrides(OwnExercise) == []


def test_a_base_method_that_feeds_the_record_only_counts_as_the_record():
    class Traced(_Base, abstract=True):
        evidence_methods = ("differentiable",)

        def differentiable(self):
            return None

    with pytest.raises(TypeError, match="overrides vjp"):

        class OwnVjp(Traced):
            name = "own_vjp"

            def vjp(self, params, x, cotangent, *, checkpoint=True):
                return None


def test_observes_names_a_value_method_the_evidence_speaks_for():
    assert set(EVIDENCE_OF) == {"vjp", "nn_checkpoint_forward"}
    with pytest.raises(ValueError, match="value_method"):
        observes("forward")
