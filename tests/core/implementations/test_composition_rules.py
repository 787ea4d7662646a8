"""The composition vocabulary (`implementations.composition`): each rule catches the
declaration it names, declarations are checked when a port class is made, and a case a port
does not declare is refused by name."""

from __future__ import annotations

import pytest

from implementations import composition
from implementations.composition import Nesting, composed, contradictions

ONCE = composed("x", 2, 1, why="keeps x, reruns the first layer")


@pytest.mark.parametrize(
    ("table", "rule"),
    [
        ({"once": composed("x a", 2, 1, why="w")}, "once is full remat"),
        ({"once": ONCE, "twice": composed("a", 2, 1, why="w")}, "never saves less"),
        ({"once": ONCE, "twice": composed("x", 2, 0, why="w")}, "never runs the forward fewer"),
        ({"once": ONCE, "under_trainer": composed("x", 1, 1, why="w")}, "fewer times"),
        ({"thrice": ONCE}, "not a composition case"),
        ({"once": composed("x", 2, 1, why="")}, "needs its reason"),
    ],
)
def test_each_rule_catches_the_declaration_it_names(table, rule):
    problems = contradictions(table)
    assert any(rule in p for p in problems), problems


def test_a_declaration_within_the_rules_has_no_contradiction():
    table = {
        "once": ONCE,
        "twice": composed("x", 2, 3, why="reruns the block again", degradation=True),
        "under_trainer": composed("x", 2, 1, why="as once"),
    }
    assert contradictions(table) == []
    assert table["twice"].forward_runs == 5


def test_declarations_are_checked_when_a_port_class_is_made():
    with pytest.raises(TypeError, match="not a case"):
        composition.check_declaration("P", {"thrice": "x"}, {})
    with pytest.raises(TypeError, match="held to 'once'"):
        composition.check_declaration("P", {"twice": "x"}, {})
    with pytest.raises(TypeError, match="both in"):
        composition.check_declaration("P", {"once": "x"}, {"once": "no"})
    with pytest.raises(TypeError, match="one non-empty line"):
        composition.check_declaration("P", {}, {"twice": "two\nlines"})


def test_a_wrapping_checkpoint_spells_its_three_cases_from_its_wrapper():
    assert composition.wrapped("ckpt({})") == {
        "once": "ckpt(block)",
        "twice": "ckpt(ckpt(block))",
        "under_trainer": "ckpt(model call) around a model whose call runs ckpt(block)",
    }
    composition.check_declaration("P", composition.wrapped("ckpt({})"), {})


def test_nesting_names_its_case():
    assert Nesting("twice").label == "twice"
    assert bool(Nesting("once"))
    assert composition.case_of(True) == "once"
    with pytest.raises(ValueError, match="nesting case"):
        Nesting("thrice")


def test_undeclared_cases_say_so():
    class Bare:
        pass

    assert composition.declared(Bare()) == {}
    assert set(composition.not_composable(Bare())) == set(composition.CASES)
