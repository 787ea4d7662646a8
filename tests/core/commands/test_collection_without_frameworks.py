"""The test suite collects with frameworks missing: no test module needs one to import, but
its own stack's folder needs that stack's.

Two checks, one of them a real collection:
- **Every framework missing at once**: a collection of the whole suite in which each
  framework is a shadow that raises `ModuleNotFoundError`. Every module outside the stacks'
  folders must import, and every stack folder must skip
  (tests/core/implementations/test_stack_folders.py
  reads the reasons). This is a user's machine with none of them, the hardest case for every
  module outside a stack's folder; it costs 2 CPU-seconds here, where a collection with one
  framework blocked imports every other (16 to 20).
- **A stack's folder imports only that stack**, read from the modules' source: what a module
  imports at its top level, directly, through the project's stacks
  (`implementations.stacks.<stack>`), through the tests' helper modules, or by loading a port
  by name (`implementations.load("keras_jax")`), must be a module of its folder's stack or
  one it has skipped on already (`pytest.importorskip`). A collection with every framework
  missing skips those folders, so it cannot see them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from implementations import manifests
from tests.support.helpers import ROOT, own_stack, ports_own_stacks, without_frameworks

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

#: Each stack's modules: its ports', and jaxlib with jax.
STACK_MODULES = {
    m.stack: {module for p in m.ports for module in own_stack(p.modules)}
    for m in manifests.manifests()
}
FRAMEWORKS = frozenset().union(*STACK_MODULES.values())
#: Each registered port's modules, for a module that loads a port by name.
PORT_MODULES = ports_own_stacks()
#: Each stack's test folder and the modules it may import.
FOLDERS = {m.tests: STACK_MODULES[m.stack] for m in manifests.manifests() if m.tests}


def test_the_suite_collects_with_every_framework_missing(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=without_frameworks(tmp_path, sorted(FRAMEWORKS)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "error" not in done.stdout.lower().split("\n")[-2], done.stdout[-2000:]
    assert " tests collected" in done.stdout, done.stdout[-2000:]


def _statements(body: list[ast.stmt], guarded: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """A module's top-level statements in order, those inside `if` and `try` blocks too, each
    with whether a `try` that catches a failed import surrounds it."""
    for node in body:
        yield node, guarded
        if isinstance(node, ast.If):
            yield from _statements(node.body + node.orelse, guarded)
        elif isinstance(node, ast.Try):
            catches = any(_catches_import_errors(handler) for handler in node.handlers)
            yield from _statements(node.body, guarded or catches)
            yield from _statements(node.orelse + node.finalbody, guarded)
            for handler in node.handlers:
                yield from _statements(handler.body, guarded)


def _catches_import_errors(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return caught is None or any(
        isinstance(n, ast.Name) and n.id in {"ImportError", "ModuleNotFoundError", "Exception"}
        for n in names
    )


def _skipped_on(node: ast.stmt) -> str | None:
    """The module a top-level `pytest.importorskip("name")` skips on, if `node` is one."""
    call = getattr(node, "value", None)
    if not isinstance(call, ast.Call) or not call.args:
        return None
    function = call.func
    named = isinstance(function, ast.Attribute) and function.attr == "importorskip"
    argument = call.args[0]
    return argument.value if named and isinstance(argument, ast.Constant) else None


def _imported(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level and node.module:
        # `from tests import reference` imports tests.support.reference, a module of its own.
        return [f"{node.module}.{alias.name}" for alias in node.names]
    return []


def _ports_loaded(node: ast.stmt) -> list[str]:
    """The ports a statement loads as it runs at import: `load("name")` or
    `implementations.load("name")` with a literal name, outside function bodies (a class body
    and a decorator run at import; a function body does not)."""
    # An `if` or `try` block's statements come from `_statements` one by one: here only the
    # condition, so that none is read twice.
    found = []
    pending = (
        [node.test] if isinstance(node, ast.If) else [] if isinstance(node, ast.Try) else [node]
    )
    while pending:
        each = pending.pop()
        if isinstance(each, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(getattr(each, "decorator_list", []))
            pending.extend(each.args.defaults + [d for d in each.args.kw_defaults if d])
            continue
        if isinstance(each, ast.Call) and _names_load(each.func) and _literal(each.args):
            found.append(each.args[0].value)
        pending.extend(ast.iter_child_nodes(each))
    return found


def _names_load(function: ast.expr) -> bool:
    if isinstance(function, ast.Name):
        return function.id == "load"
    return isinstance(function, ast.Attribute) and function.attr == "load"


def _literal(arguments: list[ast.expr]) -> bool:
    return (
        bool(arguments)
        and isinstance(arguments[0], ast.Constant)
        and isinstance(arguments[0].value, str)
    )


def _helper_file(name: str) -> Path | None:
    """The file of the tests helper module `name` names (`tests.support.helpers.ROOT`:
    tests/support/helpers.py)."""
    parts = name.split(".")
    if parts[0] != "tests":
        return None
    for end in range(len(parts), 1, -1):
        for candidate in (
            ROOT.joinpath(*parts[:end]).with_suffix(".py"),
            ROOT.joinpath(*parts[:end], "__init__.py"),
        ):
            if candidate.is_file():
                return candidate
    return None


def frameworks_at_import(path: Path, seen: frozenset[Path] = frozenset()) -> Iterator[tuple]:
    """What importing `path` imports at its top level, ports it loads by name included, through
    helpers too: (line, module, framework, whether a `pytest.importorskip` before it covers
    that framework, or, for an import, a `try` that catches the ImportError)."""
    skipped: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node, guarded in _statements(tree.body):
        if (module := _skipped_on(node)) is not None:
            skipped.add(module.split(".")[0])
        for port in _ports_loaded(node):
            # A `try` that catches ImportError does not catch PortUnavailable (a RuntimeError).
            for framework in sorted(PORT_MODULES.get(port, ())):
                yield node.lineno, f"the port {port}", framework, framework in skipped
        for name in _imported(node):
            top = name.split(".")[0]
            if top in FRAMEWORKS:
                yield node.lineno, name, top, guarded or top in skipped
            elif name.startswith("implementations.stacks."):
                stack = name.split(".")[2]
                for framework in sorted(STACK_MODULES.get(stack, ())):
                    yield node.lineno, name, framework, guarded or framework in skipped
            elif (helper := _helper_file(name)) is not None and helper not in seen:
                for _, via, framework, covered in frameworks_at_import(helper, seen | {path}):
                    covered = covered or guarded or framework in skipped
                    yield node.lineno, f"{name} ({via})", framework, covered


def test_each_stack_folder_imports_only_its_own_stack():
    found = []
    for folder, own in sorted(FOLDERS.items()):
        for path in sorted((ROOT / "tests" / folder).glob("*.py")):
            for line, name, framework, covered in frameworks_at_import(path):
                if framework not in own and not covered:
                    where = f"{path.relative_to(ROOT)}:{line}"
                    found.append(f"{where} imports {name}: {framework}, not {folder}'s")
    assert not found, "\n".join(found)


def test_the_import_reader_sees_direct_stack_and_helper_imports_and_skips(tmp_path):
    """The reader itself, on a module that imports a framework each way it can."""
    module = tmp_path / "test_mixed.py"
    module.write_text(
        "import pytest\n"
        "import torch.nn\n"
        "from implementations.stacks.paddle import paddle\n"
        "from tests import reference\n"
        "if True:\n"
        "    import mindspore\n"
        "try:\n"
        "    import mlx\n"
        "except ImportError:\n"
        "    pass\n"
        "pytest.importorskip('tensorflow')\n"
        "import tensorflow\n"
        "PORT = implementations.load('haiku')\n"
        "try:\n"
        "    implementations.load('keras_jax')\n"
        "except ImportError:\n"
        "    pass\n"
        "def later():\n"
        "    return implementations.load('deepspeed')\n"
    )
    seen = {(framework, covered) for _, _, framework, covered in frameworks_at_import(module)}
    assert seen == {
        ("torch", False),
        ("paddle", False),
        ("mindspore", False),
        ("mlx", True),
        ("tensorflow", True),
        ("jax", False),  # haiku's stack, loaded at import; deepspeed's is loaded by a test
        ("jaxlib", False),
        ("haiku", False),
        ("keras", False),  # keras_jax's: its PortUnavailable is no ImportError
    }
