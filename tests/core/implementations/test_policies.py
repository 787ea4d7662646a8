"""The remat policy vocabulary (`implementations.policies`) and the ports' declarations of it."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.contract import BackwardRecord, SavedTensor
from implementations.policies import (
    FULL,
    NONE,
    POLICY_NAMES,
    ROLES,
    Policy,
    as_policy,
    declared,
    inexpressible,
    none_and_full,
    whole_block,
)
from implementations.stacks import Port, Stack


def test_the_vocabulary_is_the_issue_s():
    assert POLICY_NAMES == ("none", "full", "save_dots", "save_named", "offload_dots", "budget")
    assert ROLES == ("x", "d1", "h", "a", "mask", "y")


@pytest.mark.parametrize("name", ["none", "full", "save_dots", "save_named", "offload_dots"])
def test_parse_reads_every_name(name):
    assert Policy.parse(name) == Policy(name)
    assert Policy.parse(f"  {name} ").label == name


@pytest.mark.parametrize(
    ("text", "fraction"), [("budget(0.5)", 0.5), ("budget(0)", 0.0), ("budget( 1 )", 1.0)]
)
def test_parse_reads_a_budget(text, fraction):
    policy = Policy.parse(text)
    assert (policy.name, policy.budget) == ("budget", fraction)
    assert Policy.parse(policy.label) == policy


@pytest.mark.parametrize(
    ("text", "error", "names"),
    [
        ("save_all", ValueError, "policy"),
        ("budget", ValueError, "budget"),
        ("budget(1.5)", ValueError, "budget"),
        ("budget(-0.1)", ValueError, "budget"),
        ("budget(nan)", ValueError, "budget"),
        ("budget(half)", ValueError, "budget"),
        (3, TypeError, "policy"),
    ],
)
def test_bad_spellings_raise_naming_the_argument(text, error, names):
    with pytest.raises(error, match=rf"\b{names}\b"):
        Policy.parse(text)


def test_a_budget_belongs_to_the_budget_policy_only():
    with pytest.raises(ValueError, match="budget"):
        Policy("save_dots", budget=0.5)
    with pytest.raises(TypeError, match="budget"):
        Policy("budget", budget=True)


def test_checkpoint_flags_are_policies():
    assert as_policy(True) == FULL
    assert as_policy(False) == NONE
    assert as_policy(np.bool_(True)) == FULL
    assert as_policy(Policy("save_dots")) == Policy("save_dots")
    with pytest.raises(TypeError, match="checkpoint"):
        as_policy("full")
    with pytest.raises(TypeError, match="checkpoint"):
        as_policy(1)


def test_only_none_is_false():
    # A port written before policies existed runs none plain and anything else as full remat.
    assert [bool(Policy.parse(n)) for n in ("none", "full", "save_dots", "budget(0)")] == [
        False,
        True,
        True,
        True,
    ]


def test_roles_are_checked_and_kept_roles_exclude_constants():
    with pytest.raises(ValueError, match="role"):
        SavedTensor((3,), "float32", "activation", role="z")
    record = BackwardRecord(
        "test",
        (
            SavedTensor((2,), "float32", "input", role="x"),
            SavedTensor((3,), "float32", "activation", role="h", memory_space="host"),
            SavedTensor((3,), "float32", "constant", role="a"),
            SavedTensor((3,), "float32", "activation"),
        ),
        backward_matmuls=4,
    )
    assert record.saved_roles == {"x", "h"}


_STACK = Stack("test")


def _port(**attrs) -> type:
    return type("P", (Port,), {"name": "p", "framework": "f", "stack": _STACK, **attrs})


_REST = {n: "reason" for n in ("save_dots", "save_named", "offload_dots", "budget")}


def test_a_full_declaration_is_accepted():
    cls = _port(policies={"none": "a", "full": "b"}, inexpressible=_REST)
    assert declared(cls) == {"none": "a", "full": "b"}
    assert inexpressible(cls) == _REST


@pytest.mark.parametrize(
    ("policies", "rest", "match"),
    [
        ({"full": "b"}, {**_REST, "none": "r"}, "none"),
        ({"none": "a", "full": "b"}, {k: v for k, v in _REST.items() if k != "budget"}, "budget"),
        ({"none": "a", "full": "b", "budget": "x"}, _REST, "both"),
        ({"none": "a", "full": "b", "remat_all": "x"}, _REST, "remat_all"),
        ({"none": "a", "full": ""}, _REST, "full"),
        ({"none": "a", "full": "b"}, {**_REST, "budget": "two\nlines"}, "one line"),
        (["none", "full"], _REST, "policies"),
    ],
)
def test_a_bad_declaration_fails_at_class_creation(policies, rest, match):
    with pytest.raises(TypeError, match=match):
        _port(policies=policies, inexpressible=rest)


def test_a_none_and_full_declaration_keeps_each_reason_as_given():
    policies, reasons = none_and_full(
        "plain", "ckpt", save_dots="a", save_named="b", offload_dots="c", budget="d"
    )
    assert policies == {"none": "plain", "full": "ckpt"}
    assert reasons == {"save_dots": "a", "save_named": "b", "offload_dots": "c", "budget": "d"}
    _port(policies=policies, inexpressible=reasons)  # a declaration the class check accepts


def test_a_whole_block_declaration_spells_its_reasons_with_the_api():
    policies, reasons = whole_block(
        "ckpt", "plain", "ckpt(block)", keeps="it keeps x", save_named="sn", offload_dots="od"
    )
    assert policies == {"none": "plain", "full": "ckpt(block)"}
    assert reasons == {
        "save_dots": "ckpt takes no policy: it keeps x",
        "save_named": "sn",
        "offload_dots": "od",
        "budget": "ckpt has no memory budget",
    }
    _port(policies=policies, inexpressible=reasons)  # a declaration the class check accepts
    _, own = whole_block("c", "a", "b", keeps="k", save_named="s", offload_dots="o", budget="b0")
    assert own["budget"] == "b0"


def test_a_port_that_declares_nothing_expresses_none_and_full():
    # Ports written before policies existed keep loading.
    cls = _port()
    assert set(declared(cls)) == {"none", "full"}
    assert set(inexpressible(cls)) == {"save_dots", "save_named", "offload_dots", "budget"}
    assert all("not declared" in reason for reason in inexpressible(cls).values())


def test_a_port_refuses_a_policy_it_does_not_declare():
    cls = _port(policies={"none": "a", "full": "b"}, inexpressible=_REST)
    # Its own vjp and a record of its own beside it (a vjp below Port's record is refused).
    methods = dict.fromkeys({*cls.__abstractmethods__, "traced_record"}, lambda *a: None)
    concrete = type("Concrete", (cls,), methods)
    port = concrete()
    assert port.policy(True) == FULL
    with pytest.raises(ValueError, match=r"checkpoint=save_dots.*reason"):
        port.policy(Policy("save_dots"))


def test_an_implementation_that_is_not_a_port_expresses_none_and_full():
    class Bare:
        pass

    assert set(declared(Bare())) == {"none", "full"}
    assert set(inexpressible(Bare())) == set(POLICY_NAMES) - {"none", "full"}
