"""One source for the registry: each port's own declarations, checked against every list of them.

The registry (the stacks' manifests) stays a lazy list, so that listing ports imports no
framework. What a loaded port declares (its name, framework, stack and checkpoint API) is read
where every port is loaded once per stack, and held to the registry and the README's ports
table there (tests/core/implementations/test_stacks_alone.py). Here: the rest of the table, and the
checks a
port class gets when it is made.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import implementations
from implementations import manifests
from implementations.stacks import Port, Stack
from tests.support.helpers import readme_ports_table

ROOT = Path(__file__).resolve().parents[3]
PORTING = (ROOT / "docs" / "PORTING.md").read_text()


def test_the_readme_ports_table_lists_every_port_with_its_extra():
    rows = readme_ports_table()
    assert set(rows) == set(implementations.BUILTIN)
    for name, (_, extra) in rows.items():
        assert extra == f"`{manifests.port(name)[1].extra}`", name


def test_the_ports_table_has_one_home():
    # The porting guide links to the README's table instead of keeping a second one.
    assert "../README.md#the-ports" in PORTING
    assert not re.search(r"^\| port \|", PORTING, flags=re.MULTILINE)


def test_a_port_missing_a_declaration_fails_when_its_class_is_made():
    with pytest.raises(TypeError, match=r"must declare framework, stack"):

        class NoStack(Port):  # the class statement is the test
            name = "no_stack"

    with pytest.raises(TypeError, match=r"stack must be a Stack"):

        class NotAStack(Port):
            name, framework, stack = "not_a_stack", "numpy", "ours"

    class Declared(Port):  # every declaration there: made without complaint
        name, framework, stack = "declared", "numpy", Stack("ours")

    assert Declared.stack.name == "ours"


def test_a_base_marked_abstract_needs_no_declarations():
    class Base(Port, abstract=True):
        pass

    with pytest.raises(TypeError, match=r"must declare name, framework, stack"):

        class Child(Base):
            pass
