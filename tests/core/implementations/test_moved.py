"""The deprecated module names (`implementations._moved`), held to the tree and to the guide.

Every old name must lead to a module that exists, import with a `DeprecationWarning` that
names it, in both import forms, until the release the guide states; a name its old module held
that has no home any more must fail with an `ImportError` naming what to import instead.
"""

from __future__ import annotations

import ast
import json
import re
import types

import pytest

from implementations import _moved
from implementations.stacks.lazy import arrays_exports
from tests.support.helpers import ROOT, run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

GUIDE = (ROOT / "docs" / "PORTING.md").read_text()


def _source(module: str):
    """The file (or package folder) that holds `module` in this tree."""
    path = ROOT / module.replace(".", "/")
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_every_old_name_leads_to_a_module_in_the_tree(old):
    assert _source(_moved.MOVED[old]).is_file(), _moved.MOVED[old]
    assert not _source(old).exists(), f"{old} is a file again: the finder would shadow it"


def _exported(table: ast.Dict) -> set[str]:
    """The names of a stack's lazy table (`stacks/lazy.py`): its keys, and those of each
    `**arrays_exports(...)` in it (called here: it imports nothing)."""
    names = {key.value for key in table.keys if key is not None}
    for key, value in zip(table.keys, table.values, strict=True):
        if key is None:
            assert isinstance(value, ast.Call), ast.dump(value)
            assert value.func.id == "arrays_exports", ast.dump(value)
            names |= set(arrays_exports(*(ast.literal_eval(a) for a in value.args)))
    return names


def _top_level_names(module: str) -> set[str]:
    tree = ast.parse(_source(module).read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            if any(getattr(t, "id", "") == "_EXPORTS" for t in node.targets):
                names |= _exported(node.value)  # a stack's lazy names
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
            if node.target.id == "_EXPORTS":  # a stack package's lazy names (stacks/lazy.py)
                names |= _exported(node.value)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


@pytest.mark.parametrize("old", sorted(_moved.GONE))
def test_a_gone_name_is_really_gone_and_its_replacement_exists(old):
    new = _moved.MOVED[old]
    for name, instead in _moved.GONE[old].items():
        assert name not in _top_level_names(new), f"{new} has {name}: it is not gone"
        module, _, attr = instead.split(" ")[0].rpartition(".")
        if module.startswith("implementations."):
            assert attr in _top_level_names(module) or _source(f"{module}.{attr}").is_file()


# Both import forms of the 0.1 names that need numpy only, in a fresh process (a module
# imported once does not warn again), and a gone name.
PROBE = """
import json, warnings
warnings.simplefilter("always")
found = {}
with warnings.catch_warnings(record=True) as seen:
    from implementations import canonical_init
    import implementations.flax_rng
    from implementations._canonical_init import numpy_init
    import implementations._out_in
    from implementations.porting import numpy as porting_numpy
found["warnings"] = [str(w.message) for w in seen if w.category is DeprecationWarning]
found["canonical_params"] = canonical_init.canonical_params is numpy_init.canonical_params
found["lazy"] = porting_numpy.canonical_params is canonical_init.canonical_params
print(json.dumps(found))
"""


def test_the_old_names_import_in_both_forms_and_warn_with_the_new_name(tmp_path):
    done = run_python(["-c", PROBE], tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["canonical_params"]
    assert found["lazy"]
    for old in [
        "implementations.canonical_init",
        "implementations.flax_rng",
        "implementations._canonical_init",
        "implementations._canonical_init.numpy_init",
        "implementations._out_in",
        "implementations.porting",
        "implementations.porting.numpy",
    ]:
        (message,) = [m for m in found["warnings"] if m.startswith(f"{old} has moved:")]
        assert f"import from {_moved.MOVED[old]} instead" in message
        assert message.endswith(f"the old name goes in {_moved.REMOVED_IN})")


def test_a_gone_name_raises_an_import_error_naming_the_replacement():
    # The moved module's __getattr__, on a stand-in for its new module (no torch imported).
    lookup = _moved._lookup("implementations._torch.mlp", types.ModuleType("stand_in"))
    with pytest.raises(ImportError) as raised:
        lookup("canonical_arrays")
    assert str(raised.value) == (
        "implementations._torch.mlp.canonical_arrays was removed: import "
        "implementations.stacks.torch.state_to_params (a Params of the same arrays) instead"
    )
    with pytest.raises(AttributeError, match="has no attribute 'never_was'"):
        lookup("never_was")


def _policy() -> str:
    start = GUIDE.index("### Deprecated names")
    return GUIDE[start : GUIDE.index("\n#", start + 1)]


def test_the_guide_states_the_policy_once_with_every_old_layout():
    assert GUIDE.count("### Deprecated names") == 1
    assert GUIDE.count("DeprecationWarning") == 1  # the policy is said in one place
    policy = _policy()
    assert f"until {_moved.REMOVED_IN}" in policy
    named = set(re.findall(r"`(implementations\.[\w.]+|_\w+)`", policy))
    tops = {old for old in _moved.OLD_LAYOUTS if old.count(".") == 1}
    short = {old.split(".")[1] for old in tops if old.split(".")[1].startswith("_")}
    flat = {old for old in tops if not old.split(".")[1].startswith("_")}
    assert flat - {"implementations.porting"} <= named, flat - named
    assert short <= named, short - named
    assert "`implementations.porting.*`" in policy
    ports = [old for old in _moved.MOVED if old not in _moved.OLD_LAYOUTS]
    assert "implementations.pytorch" in ports
    assert "`implementations.pytorch`" in policy
