"""`implementations.stacks.lazy`: a stack package's one table of names, and what it derives.

A stack's `__init__` declares `_EXPORTS` (name -> submodule) and takes `__getattr__`, `__dir__`
and `__all__` from `lazy_exports`: a name is imported on first use, so importing the package
imports no framework (tests/core/implementations/test_stacks_alone.py checks that for every stack).
"""

from __future__ import annotations

import ast
import importlib
import sys

import pytest

from implementations.stacks.lazy import lazy_exports
from tests.support.helpers import ROOT

STACKS = ROOT / "implementations" / "stacks"
LAZY = sorted(p.parent.name for p in STACKS.glob("*/__init__.py") if "_EXPORTS" in p.read_text())


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package `lazy_probe` whose `__init__` is a stack's pattern over two submodules."""
    root = tmp_path / "lazy_probe"
    root.mkdir()
    (root / "__init__.py").write_text(
        "from implementations.stacks.lazy import lazy_exports\n"
        '_EXPORTS = {"VALUE": ".values", "twice": ".values", "values": ".values",'
        ' "other": ".other"}\n'
        "__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)\n"
    )
    (root / "values.py").write_text("VALUE = 3\n\ndef twice(x):\n    return 2 * x\n")
    (root / "other.py").write_text("other = 'the name of the module is the name asked for'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("lazy_probe")
    for name in [m for m in sys.modules if m.split(".")[0] == "lazy_probe"]:
        del sys.modules[name]


def test_the_table_gives_all_dir_and_names_imported_on_first_use(package):
    assert package.__all__ == ["VALUE", "other", "twice", "values"]
    assert {"VALUE", "other", "twice", "values"} <= set(dir(package))
    assert "lazy_probe.values" not in sys.modules  # nothing imported until asked for
    assert package.twice(package.VALUE) == 6
    assert "lazy_probe.values" in sys.modules
    assert "lazy_probe.other" not in sys.modules
    assert package.values is sys.modules["lazy_probe.values"]  # the submodule, by its name
    assert package.other is sys.modules["lazy_probe.other"]  # its own name: the module wins


def test_a_plain_module_s_names_come_from_its_sibling(package, tmp_path):
    # a stack's bench: its bench --schedules names live in the sibling schedules.py
    (tmp_path / "lazy_probe" / "user.py").write_text(
        "from implementations.stacks.lazy import lazy_exports\n"
        '__getattr__, __dir__, _ = lazy_exports(__name__, {"VALUE": ".values"})\n'
    )
    user = importlib.import_module("lazy_probe.user")
    assert "lazy_probe.values" not in sys.modules
    assert user.VALUE == 3
    assert "lazy_probe.values" in sys.modules
    with pytest.raises(AttributeError, match=r"module 'lazy_probe\.user' has no attribute 'x'"):
        user.x  # noqa: B018


def test_a_name_not_in_the_table_is_an_attribute_error_naming_the_package(package):
    with pytest.raises(AttributeError, match="module 'lazy_probe' has no attribute 'absent'"):
        package.absent  # noqa: B018


@pytest.mark.parametrize(
    "names",
    [{"ok": "port"}, {"not a name": ".port"}, {"ok": ""}],
    ids=["absolute", "name", "empty"],
)
def test_a_malformed_table_is_refused_naming_the_argument(names):
    with pytest.raises(ValueError, match=r"^names: .* in some\.package: expected an identifier"):
        lazy_exports("some.package", names)


def _top_level(path) -> set[str]:
    """The names a module's source binds at its top level (defs, classes, assignments,
    imports, in `with`, `if` and `try` blocks too), read without importing it (the module
    imports its framework)."""
    names = set()
    body = list(ast.parse(path.read_text()).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.With | ast.If | ast.Try):
            body += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            body += [s for handler in getattr(node, "handlers", []) for s in handler.body]
    return names


@pytest.mark.parametrize("stack", LAZY)
def test_every_stack_s_table_names_what_its_submodules_define(stack):
    module = importlib.import_module(f"implementations.stacks.{stack}")  # imports no framework
    assert module.__all__ == sorted(module._EXPORTS)
    for name, where in module._EXPORTS.items():
        source = STACKS / stack / f"{where.lstrip('.')}.py"
        assert source.is_file(), f"{stack}: {name} -> {where}: no such submodule"
        if where.lstrip(".") != name:  # a submodule offered by its own name is the module
            assert name in _top_level(source), f"{stack}: {where} does not define {name}"
