"""A property is one unit: its module under conformance/checking/properties/ holds its check,
its strategy, the declarations it reads and the mutants it must kill, and the registry is the
folder. Adding a property is adding its module; nothing else in conformance/ names them."""

from __future__ import annotations

import ast
import inspect
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

import conformance
from conformance.checking import properties
from conformance.checking.properties import BY_ID, BY_KEY, PROPERTIES, killer_of
from conformance.checking.properties.schema import conforms
from implementations import manifests
from implementations.composition import composed
from implementations.contract import Implementation
from implementations.expectations import Expectations
from implementations.manifests import MutantEntry

FOLDER = Path(properties.__file__).parent
PACKAGE = Path(conformance.__file__).parent


def test_the_registry_is_the_folder_s_property_modules_in_letter_order():
    files = sorted(p.stem for p in FOLDER.glob("[a-z]_*.py"))
    assert [p.key for p in PROPERTIES] == files
    assert [p.id for p in PROPERTIES] == sorted(p.id for p in PROPERTIES)
    assert len(files) >= 11
    for key in files:
        assert sys.modules[f"{properties.__name__}.{key}"].PROPERTY is BY_KEY[key]


def test_a_module_that_is_not_its_property_is_refused(monkeypatch):
    name = f"{properties.__name__}.z_stray"
    stray = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, stray)
    with pytest.raises(TypeError, match="z_stray must define PROPERTY"):
        properties._load("z_stray")
    stray.PROPERTY = BY_KEY["a_init"]
    with pytest.raises(ValueError, match="z_stray defines the property 'a_init'"):
        properties._load("z_stray")


def _property_keys_spelled_out(path: Path) -> list[str]:
    """The string constants in `path` that are a property's key, or its letter in brackets."""
    spellings = {p.key for p in PROPERTIES} | {f"({p.id})" for p in PROPERTIES}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(path.parents[1])}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in spellings
    ]


def test_nothing_else_in_conformance_names_a_property_by_hand():
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if FOLDER not in path.parents
        for hit in _property_keys_spelled_out(path)
    ]
    assert found == []


def test_the_search_for_hand_written_keys_finds_one(tmp_path):
    planted = tmp_path / "running" / "supervisor.py"
    planted.parent.mkdir()
    planted.write_text('HYGIENE = "h_hygiene"\nLETTER = "(k)"\nPROSE = "as (k) does"\n')
    assert _property_keys_spelled_out(planted) == [
        "running/supervisor.py:1: 'h_hygiene'",
        "running/supervisor.py:2: '(k)'",
    ]


def test_each_mutant_has_exactly_one_killer_its_manifest_s_or_a_property_module_s():
    from conformance.mutants import MUTANTS

    declared = {s.name: s.killed_by for m in manifests.manifests() for s in m.mutants}
    named = [name for p in PROPERTIES for name in p.mutants]
    assert len(named) == len(set(named))
    for name, spec in MUTANTS.items():
        if declared.get(name):  # a stack's: its manifest's letter, no property module's list
            assert spec.killed_by == BY_ID[declared[name]].key, name
            assert name not in named, name
        else:  # the suite's own (or one whose manifest does not say yet)
            assert name in BY_KEY[spec.killed_by].mutants, name
    assert set(named) <= set(MUTANTS)  # no stale name


def test_a_declared_killer_and_a_listed_one_are_refused_as_two():
    listed = next(name for p in PROPERTIES for name in p.mutants)
    with pytest.raises(ValueError, match=f"mutant {listed!r}: .* and .* names it"):
        killer_of(listed, "a")
    with pytest.raises(ValueError, match="mutant 'm': killed_by 'z' is no property's letter"):
        killer_of("m", "z")
    assert killer_of("m", "e") == BY_ID["e"].key


def test_a_manifest_entry_that_names_its_killer_in_first_is_refused():
    with pytest.raises(TypeError, match="mutant m: first must be a tuple of property letters"):
        MutantEntry("m", "pkg.mod:Class", "a bug", "pytorch", "e_evidence")
    assert MutantEntry("m", "pkg.mod:Class", "a bug", "pytorch", ("i",)).first == ("i",)
    with pytest.raises(TypeError, match="mutant m: killed_by must be a property's letter"):
        MutantEntry("m", "pkg.mod:Class", "a bug", "pytorch", killed_by="E")


def test_a_mutant_no_property_names_is_an_error_naming_it():
    with pytest.raises(ValueError, match="mutant 'nobody_s': no property names it"):
        killer_of("nobody_s")


def _reads_off_port(source: str) -> set[str]:
    """The attributes a module's code reads off a variable named `port`: `port.x`,
    `getattr(port, "x")`, `hasattr(port, "x")`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "port":
            found.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) in ("getattr", "hasattr")
            and getattr(node.args[0], "id", None) == "port"
            and isinstance(node.args[1], ast.Constant)
        ):
            found.add(node.args[1].value)
    return found


def test_the_search_for_port_reads_finds_each_form():
    source = 'port.ranks\ngetattr(port, "layouts", ())\nhasattr(port, "rank_records")\nother.x\n'
    assert _reads_off_port(source) == {"ranks", "layouts", "rank_records"}


CONTRACT = {name for name in dir(Implementation) if not name.startswith("_")} | {"name"}


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.key)
def test_what_a_property_reads_off_a_port_is_in_its_declared_schema(prop):
    module = sys.modules[f"{properties.__name__}.{prop.key}"]
    beyond_contract = _reads_off_port(inspect.getsource(module)) - CONTRACT
    declared = {d.name for d in prop.reads if d.where == "port"}
    assert beyond_contract <= declared


@pytest.mark.parametrize("prop", [p for p in PROPERTIES if p.reads], ids=lambda p: p.key)
def test_each_declaration_a_property_lists_is_read_by_its_code(prop):
    module = inspect.getsource(sys.modules[f"{properties.__name__}.{prop.key}"])
    for declaration in prop.reads:
        where = inspect.getsource(declaration.reader) if declaration.reader else module
        assert f'"{declaration.name}"' in where or f".{declaration.name}" in where, declaration
        if declaration.where == "stack":
            assert declaration.name in Expectations.__dataclass_fields__, declaration


def test_every_stack_s_declarations_are_of_the_types_the_properties_read():
    stacks = [m for m in manifests.manifests() if m.expectations]
    assert len(stacks) >= 10
    checked = 0
    for prop in PROPERTIES:
        for declaration in (d for d in prop.reads if d.where == "stack"):
            for manifest in stacks:
                value = getattr(manifests.resolve(manifest.expectations), declaration.name)
                assert conforms(value, declaration.type), (manifest.stack, declaration.name)
                checked += 1
    assert checked >= 20  # (j)'s families and (k)'s compositions, of every stack


def test_conforms_refuses_what_is_not_of_the_type():
    table = Mapping[str, Mapping[str, type(composed("x", 1, 1, "why"))]]
    assert conforms({"torch": {"once": composed("x", 1, 1, "why")}}, table)
    assert not conforms({"torch": {"once": ("x", 1, 1)}}, table)
    assert not conforms({"torch": ["once"]}, table)
    assert conforms(("batch", "model"), Sequence[str])
    assert not conforms("batch", Sequence[str])
    assert conforms(len, Callable)
    assert not conforms(3, Callable)
    assert conforms(None, int | None)
    assert not conforms("3", int | None)
    with pytest.raises(TypeError, match="not a form conforms checks"):
        conforms(3, "int")
