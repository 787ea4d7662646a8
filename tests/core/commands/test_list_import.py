"""`list --import` says only what an import showed (issue 76, item 5): a port that cannot load
beside the others in this process (Paddle after TensorFlow, Keras on another backend) is
loaded in a process of its own, never called available on its word."""

from __future__ import annotations

import argparse

import implementations
from conformance.commands import list_ports
from tests.support.helpers import without_frameworks


def _held(name: str) -> implementations.PortStatus:
    """What `implementations.status` says of a port whose stack another port holds here."""
    why = "loads in a process of its own: Paddle cannot be imported after TensorFlow"
    return implementations.PortStatus(
        name, implementations.BUILTIN[name], "built-in", "available", why, True
    )


def _listed(monkeypatch, capsys, statuses) -> dict[str, str]:
    by_name = {status.name: status for status in statuses}
    monkeypatch.setattr(
        list_ports.implementations,
        "status",
        lambda names=None: statuses if names is None else [by_name[n] for n in names],
    )
    monkeypatch.setattr(list_ports.implementations, "registered", lambda: dict.fromkeys(by_name))
    monkeypatch.setenv("COLUMNS", "300")
    assert list_ports.run(argparse.Namespace(load=True)) == 0
    lines = capsys.readouterr().out.splitlines()
    return {line.split()[0]: line for line in lines if line.strip()}


def test_a_held_port_whose_framework_fails_to_import_is_not_called_available(
    tmp_path, monkeypatch, capsys
):
    # paddle shadowed by a package that fails on import, for the child process too.
    env = without_frameworks(tmp_path, ["paddle"])
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    line = _listed(monkeypatch, capsys, [_held("paddle")])["paddle"]
    assert " available " not in line, line
    assert " unavailable " in line, line
    assert "needs 'paddle', not installed" in line


def test_a_held_port_that_loads_alone_is_available_and_says_where(monkeypatch, capsys):
    # hips_autograd needs only autograd and numpy: its import in a fresh process is quick.
    line = _listed(monkeypatch, capsys, [_held("hips_autograd")])["hips_autograd"]
    assert " available " in line, line
    assert "loaded in a process of its own" in line


class _NotInstalled:
    """A meta path finder for which `name` is not installed (whatever this venv holds)."""

    def __init__(self, name: str):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def test_paddle_after_tensorflow_is_not_installed_when_paddle_is_not(monkeypatch):
    # The stack's own guard (`paddle.loaded`) holds Paddle back after TensorFlow only where
    # Paddle is installed; a missing one reads "not installed", as it does alone.
    import importlib.util
    import sys
    import types

    real = importlib.util.find_spec
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "paddle" else real(name, *a)
    )
    monkeypatch.setattr(sys, "meta_path", [_NotInstalled("paddle"), *sys.meta_path])
    # Loaded already where it is installed (a session loads Paddle before TensorFlow).
    for name in [m for m in sys.modules if m.split(".")[0] == "paddle"]:
        monkeypatch.delitem(sys.modules, name)
    for name in [m for m in sys.modules if m.startswith("implementations.stacks.paddle")]:
        monkeypatch.delitem(sys.modules, name)
    implementations.load.cache_clear()
    try:
        (status,) = implementations.status(["paddle"])
    finally:
        implementations.load.cache_clear()
    assert not status.elsewhere, status
    assert status.state == "unavailable", status
    assert "needs 'paddle', not installed" in status.reason
