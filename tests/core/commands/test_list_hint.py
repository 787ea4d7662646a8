"""`list` says what installs an unavailable port, in the words a run uses
(`implementations.install_hint`; issue 60, item 7)."""

from __future__ import annotations

import argparse

import implementations
from conformance.commands import list_ports
from implementations.found import Found


def test_an_unavailable_port_gets_the_runs_pip_hint(capsys, monkeypatch):
    def find(name, target):
        if name == "pytorch":
            return Found(name, "unavailable", "needs 'torch', not installed")
        return Found(name, "found", versions={})

    monkeypatch.setattr(list_ports, "find", find)
    monkeypatch.setenv("COLUMNS", "300")
    list_ports.run(argparse.Namespace(load=False))
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("pytorch ")]
    hint = implementations.install_hint("pytorch")
    # The command as this package was installed (tests/core/implementations/test_install_hint.py).
    assert f"({implementations.install_command('torch')})" == hint.strip()
    assert f"needs 'torch', not installed{hint}" in line
