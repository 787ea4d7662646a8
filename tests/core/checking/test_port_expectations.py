"""Expectations a port declares itself, held to the policy vocabulary; who measured a record.

Every table the suite's stacks declare obeys the vocabulary (at the shapes (j) draws), and
each rule of `implementations.expectations.contradictions` catches the declaration it names.
`checking.provenance` says *suite* for the suite's own instruments and *port* for a record a
port's own code made.
"""

from __future__ import annotations

import pytest

from conformance.checking import policy_expectations, provenance
from conformance.checking.properties import j_policies
from conformance.checking.strategies import POLICY_SHAPES
from implementations.contract import MEASURED_BY_BASE, MEASURED_BY_PORT, MEASURED_BY_SUITE
from implementations.expectations import contradictions, expect, from_wire

GOOD = {
    "none": expect("x h a", 4, why="relu's gradient reads h, dW2 reads a"),
    "full": expect("x", 5, why="reruns x @ W1"),
    "save_dots": expect("x d1", 4, why="d1 kept"),
    "save_named": expect("x h", 4, why="h kept"),
    "offload_dots": expect("x d1", 4, host="d1", why="d1 on the host"),
    "budget(0)": expect("x", 5, why="as full"),
}


def test_every_table_the_suite_declares_obeys_the_vocabulary():
    for family, table in j_policies.tables().items():
        assert contradictions(table, tuple(POLICY_SHAPES)) == [], family


def test_a_consistent_declaration_has_no_contradiction():
    assert contradictions(GOOD, (4, 7)) == []


@pytest.mark.parametrize(
    ("label", "entry", "said"),
    [
        ("full", expect("x a", 5, why="w"), "full: keeps {a, x}: more than the block's inputs"),
        ("budget(0)", expect("x h", 5, why="w"), "budget(0): keeps {h, x}: more than"),
        ("none", expect("x", 4, why="w"), "none: keeps {x}: no activation"),
        ("save_named", expect("x d1", 4, why="w"), "save_named: keeps {d1, x}: not the named"),
        ("save_dots", expect("x a", 4, why="w"), "save_dots: keeps {a, x}: no matmul output"),
        ("offload_dots", expect("x d1", 4, why="w"), "offload_dots: keeps nothing on the host"),
        ("save_dots", expect("x d1", 4, host="d1", why="w"), "only offload_dots moves to the host"),
        ("none", expect("x h z", 4, why="w"), "names z, not a role"),
        ("full", expect("x", 5), "needs its reason"),
        ("save_all", expect("x", 5, why="w"), "'save_all' is not a policy"),
    ],
)
def test_each_rule_catches_the_declaration_it_names(label, entry, said):
    table = {**GOOD, label: entry}
    assert any(said in problem for problem in contradictions(table, (4, 7))), contradictions(
        table, (4, 7)
    )


def test_none_keeping_less_than_full_and_full_running_fewer_matmuls_contradict():
    table = {**GOOD, "none": expect("h a", 5, why="w")}
    problems = " / ".join(contradictions(table, (4,)))
    assert "none keeps {a, h}, less than full's {x}" in problems
    assert "full runs 5 backward matmuls, none 5" in problems


def test_a_hello_declaration_reads_as_expected_records_and_malformed_ones_are_refused():
    table = from_wire({"none": {"roles": ["x", "a"], "backward_matmuls": 4, "why": "w"}})
    assert table["none"].roles == {"x", "a"}
    assert table["none"].host == frozenset()
    for bad in ([], {"none": []}, {"none": {"roles": "x"}}, {"none": {"roles": [], "oops": 1}}):
        with pytest.raises(ValueError, match="expectations"):
            from_wire(bad)


class _Declaring:
    name = "mine"
    framework = "mine"
    instrument_family = "mine"
    expectations = GOOD


def test_a_ports_own_declaration_comes_first_and_says_whose_it_is():
    from implementations.policies import Policy

    port = _Declaring()
    assert j_policies.expected(port, Policy("save_dots")).roles == {"x", "d1"}
    assert policy_expectations.source(port) == (
        "the mine instrument's, declared by the port itself (its class)"
    )
    port.expectations = {**GOOD, "full": expect("x a", 5, why="w")}
    with pytest.raises(j_policies.Contradiction, match="contradict the policy"):
        j_policies.expected(port, Policy("none"))


def test_the_suites_tables_say_whose_they_are():
    class Torchy:
        name = "pytorch"

    assert policy_expectations.source(Torchy()) == (
        "the torch instrument's, declared by the suite "
        "(implementations/stacks/torch/expectations.py)"
    )


def _port_classes():
    from implementations.stacks.base import Port, Stack, observes
    from implementations.stacks.numpy import canonical_params

    suite_stack = Stack("fake", instrument=canonical_params)  # code of the suite's own
    own_stack = Stack("fake", instrument=lambda *a: None)  # code of the port's

    class Model(Port, abstract=True):
        # A stand-in for a base of the suite's (its module says so): the model, and a record
        # of the suite's that runs the port's own vjp (`observes`).
        __module__ = "implementations.stacks.stand_in"

        def init_params(self, seed, dim, features): ...
        def forward(self, params, x, *, checkpoint=True): ...
        def vjp(self, params, x, cotangent, *, checkpoint=True): ...
        def nn_checkpoint_forward(self, seed, x, features): ...

        @observes("vjp")
        def backward_record(self, params, x, *, checkpoint=True):
            self.vjp(params, x, x, checkpoint=checkpoint)

    class Inherits(Model):
        name, framework, stack = "inherits", "fake", suite_stack

    class Overrides(Inherits):
        name = "overrides"

        def backward_record(self, params, x, *, checkpoint=True):
            return None

    class OwnInstrument(Model):
        name, framework, stack = "own_instrument", "fake", own_stack

    return Inherits(), Overrides(), OwnInstrument()


def test_provenance_reads_where_the_record_code_lives():
    from implementations.process import ProcessPort

    inherits, overrides, own_instrument = _port_classes()
    assert provenance.measured_by(inherits) == MEASURED_BY_SUITE
    assert provenance.measured_by(overrides) == MEASURED_BY_PORT
    assert provenance.measured_by(own_instrument) == MEASURED_BY_PORT
    assert provenance.measured_by(ProcessPort.__new__(ProcessPort)) == MEASURED_BY_PORT
    inherits.vjp = lambda *a, **k: None  # the record runs the port's own vjp: still the suite
    assert provenance.measured_by(inherits) == MEASURED_BY_SUITE
    described = provenance.describe(overrides)
    assert described["measured_by"] == "port"
    assert described["evidence"].startswith("self-reported")


def test_provenance_says_base_for_values_set_where_the_record_never_looks():
    """A value method set on the instance, below a record that never runs it: the record
    reads the base's model, and (e) refuses it."""
    from conformance.checking.checks import ConformanceError
    from conformance.checking.properties.shared import record_of
    from implementations.contract import BackwardRecord
    from implementations.stacks.base import Port, Stack
    from implementations.stacks.numpy import canonical_params

    class Traced(Port):
        # A stand-in for a traced base of the suite's: its record traces a model of its own.
        __module__ = "implementations.stacks.stand_in"
        name, framework, stack = "traced", "fake", Stack("fake", instrument=canonical_params)

        def init_params(self, seed, dim, features): ...
        def forward(self, params, x, *, checkpoint=True): ...
        def vjp(self, params, x, cotangent, *, checkpoint=True): ...
        def nn_checkpoint_forward(self, seed, x, features): ...

        def traced_record(self, params, x, checkpoint):
            return BackwardRecord("stand-in", ())

    port = Traced()
    assert provenance.measured_by(port) == MEASURED_BY_SUITE
    port.vjp = lambda *a, **k: None
    assert provenance.measured_by(port) == MEASURED_BY_BASE
    assert "base's model" in provenance.describe(port)["evidence"]
    with pytest.raises(ConformanceError, match="read off the base's model"):
        record_of(port, "backward_record", port.traced_record(None, None, True))
