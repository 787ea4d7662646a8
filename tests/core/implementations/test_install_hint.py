"""The install hint depends on how the package was installed (issue 76, item 5): from a clone
(an editable install) it is the clone's own command, with its constraints; from a normal
install, the plain one. Each case is a copy of `implementations/installing.py` in a tree of
that kind, imported from there."""

from __future__ import annotations

import importlib.util
import shlex
import shutil

import implementations
from conformance.tables.kinds import run as run_tables
from implementations import installing


def _installed_in(directory):
    """`installing` as it reads when its package sits in `directory`."""
    package = directory / "implementations"
    package.mkdir(parents=True)
    shutil.copy(installing.__file__, package / "installing.py")
    spec = importlib.util.spec_from_file_location("installing_copy", package / "installing.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_clone_gets_its_own_editable_command_with_its_constraints(tmp_path):
    tree = tmp_path / "my clone"
    module = _installed_in(tree)
    (tree / "pyproject.toml").write_text('[project]\nname = "remat-conformance"\n')
    (tree / "constraints.txt").write_text("torch==2.13.0\n")
    expected = f"cd '{tree}' && pip install -c constraints.txt -e '.[paddle]'"
    assert module.install_command("paddle") == expected


def test_a_normal_install_gets_the_plain_command(tmp_path):
    module = _installed_in(tmp_path / "site-packages")
    assert module.clone() is None
    assert module.install_command("paddle") == "pip install 'remat-conformance[paddle]'"


def test_this_checkout_is_a_clone_and_its_hint_says_so():
    # The tests run from a clone: the hint a run and `list` print is the clone's command,
    # and the run's tables find it in a not-installed port's reason.
    hint = implementations.install_hint("paddle")
    tree = installing.clone()
    assert tree is not None
    assert (tree / "constraints.txt").is_file()
    assert (
        hint == f" (cd {shlex.quote(str(tree))} && pip install -c constraints.txt -e '.[paddle]')"
    )
    reason = f"needs 'paddle', not installed{hint}"
    port = {"name": "paddle", "state": "unavailable", "reason": reason}
    assert run_tables.install_command(port) == hint.strip(" ()")
