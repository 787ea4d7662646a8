"""The registry: lazy imports, and ports whose framework is missing."""

from __future__ import annotations

import pytest

import implementations
from implementations import PortUnavailable, manifests
from tests.support.helpers import ROOT

# A missing framework makes its port unavailable with a reason naming it and the extra that
# installs it: `list --import` with torch shadowed, tests/core/commands/test_cli.py (one process
# that
# loads every port, for both).


def test_unknown_port_names_the_registered_ones():
    with pytest.raises(PortUnavailable, match="flax_linen"):
        implementations.load("no_such_port")


def test_builtin_ports_are_lazy_strings():
    for target in implementations.BUILTIN.values():
        if target.startswith(implementations.EXEC_PREFIX):  # a process port: a command line
            assert target.removeprefix(implementations.EXEC_PREFIX).split()
            continue
        module, _, attr = target.partition(":")
        assert module.startswith("implementations.")
        assert attr
    assert implementations.CANONICAL in implementations.BUILTIN


def test_every_builtin_port_names_an_extra_that_pyproject_has():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = ROOT / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    declared = {name: entry.extra for name, (_, entry) in manifests.ports().items()}
    assert set(declared) == set(implementations.BUILTIN)
    (everything,) = extras["all"]
    in_all = everything.split("[")[1].rstrip("]").split(",")
    # The engines are left out of [all] (README, "The engines"): they are in [engines].
    (engines,) = extras["engines"]
    in_engines = engines.split("[")[1].rstrip("]").split(",")
    for port, needed in declared.items():
        for extra in needed.split(","):  # keras ports name keras and their backend
            assert extra in extras, port
            assert extra in in_all or extra in in_engines, port


def test_a_stack_held_by_another_backend_makes_its_port_unavailable(tmp_path, monkeypatch):
    # What a Keras port raises where Keras runs on another backend: not broken,
    # unavailable, with its message (the port loads in a process of its own).
    (tmp_path / "held_port_module.py").write_text(
        "from implementations.contract import StackUnavailable\n"
        "raise StackUnavailable(\"keras is already imported on the 'jax' backend\")\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # Only this port is registered, so that no other port loads here.
    only = {"held_port": ("held_port_module:Port", "built-in")}
    monkeypatch.setattr(implementations, "registered", lambda: only)
    # Not a built-in: its import marks this process as having run outside code; that stays
    # this test's (the example bank writes nothing in such a process).
    monkeypatch.setattr(implementations, "OUTSIDE_LOADED", {})
    with pytest.raises(PortUnavailable, match="'jax' backend") as raised:
        implementations.load("held_port")
    assert raised.value.missing
    assert raised.value.held
    # Listed as available where it can run: in a process of its own.
    (status,) = implementations.status()
    assert (status.name, status.state, status.elsewhere) == ("held_port", "available", True)
    assert "process of its own" in status.reason
    assert implementations.available() == {}  # not loadable here
