"""The small helpers several stacks and the process adapter share: the environment read and set
(`implementations.environment`), a signal in words (`signals`), the load-order guard
(`stacks.load_order`) and file descriptor 2 caught (`stacks.native_stderr`)."""

from __future__ import annotations

import os
import signal
import sys
import types

import pytest

from implementations.contract import StackUnavailable
from implementations.environment import positive_seconds, variable_set
from implementations.signals import signal_name
from implementations.stacks.load_order import refuse_after
from implementations.stacks.native_stderr import captured_fd2

VARIABLE = "REMAT_TEST_SHARED_HELPERS"


def test_variable_set_puts_an_unset_variable_back_to_unset_even_after_an_error(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    seen = []

    def fails() -> None:
        with variable_set(VARIABLE, "inside"):
            seen.append(os.environ[VARIABLE])
            raise RuntimeError

    with pytest.raises(RuntimeError):
        fails()
    assert seen == ["inside"]
    assert VARIABLE not in os.environ


def test_variable_set_puts_a_set_variable_back_to_its_value(monkeypatch):
    monkeypatch.setenv(VARIABLE, "before")
    with variable_set(VARIABLE, "inside"):
        assert os.environ[VARIABLE] == "inside"
    assert os.environ[VARIABLE] == "before"


@pytest.mark.parametrize(("setting", "expected"), [("", None), ("  ", None), (" 2.5 ", 2.5)])
def test_positive_seconds_reads_a_setting_or_none(monkeypatch, setting, expected):
    monkeypatch.setenv(VARIABLE, setting)
    assert positive_seconds(VARIABLE) == expected


@pytest.mark.parametrize("setting", ["0", "-1", "nan", "soon"])
def test_positive_seconds_refuses_anything_else_naming_the_variable(monkeypatch, setting):
    monkeypatch.setenv(VARIABLE, setting)
    with pytest.raises(ValueError, match=f"^{VARIABLE} must be a positive number of seconds, got"):
        positive_seconds(VARIABLE)


def test_signal_name_names_a_known_signal_and_numbers_an_unknown_one():
    assert signal_name(signal.SIGKILL) == "SIGKILL"
    assert signal_name(999) == "signal 999"


def test_refuse_after_refuses_only_an_installed_package_not_yet_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, "remat_test_earlier", types.ModuleType("earlier"))
    monkeypatch.delitem(sys.modules, "json", raising=False)  # installed, and now not imported
    with pytest.raises(StackUnavailable, match=r"^the reason$"):
        refuse_after("remat_test_earlier", "json", "the reason")
    refuse_after("remat_test_earlier", "remat_no_such_package", "the reason")  # not installed
    refuse_after("remat_test_earlier", "os", "the reason")  # imported already
    refuse_after("remat_test_absent", "json", "the reason")  # the earlier one not loaded


def test_captured_fd2_keeps_what_native_code_writes_and_puts_the_descriptor_back():
    before = os.fstat(2)
    caught: list[str] = []
    with captured_fd2(caught):
        assert os.fstat(2).st_ino != before.st_ino  # fd 2 is elsewhere within the block
        os.write(2, b"written to fd 2\n")
    assert caught == ["written to fd 2\n"]
    after = os.fstat(2)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
