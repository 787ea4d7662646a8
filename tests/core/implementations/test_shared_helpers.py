"""The small helpers several stacks and the process adapter share: the environment read and set
(`implementations.environment`), a signal in words (`signals`), the load-order guard
(`stacks.load_order`), file descriptor 2 caught (`stacks.native_stderr`) and the labels of an
op-level instrument (`stacks.value_labels`, `stacks.block_runs`)."""

from __future__ import annotations

import os
import signal
import sys
import types

import pytest

from implementations.contract import StackUnavailable
from implementations.environment import positive_seconds, variable_set
from implementations.signals import signal_name
from implementations.stacks.block_runs import BlockRuns
from implementations.stacks.load_order import refuse_after
from implementations.stacks.native_stderr import captured_fd2
from implementations.stacks.value_labels import ORIGINS, derived, role_after, stronger

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


def test_role_after_walks_the_block_x_d1_h_a_d2_y():
    roles, steps = ["x"], ("matmul", "add", "relu", "matmul", "add")
    for step in steps:
        roles.append(role_after(step, ["", roles[-1]]))  # the first role known counts
    assert roles == ["x", "d1", "h", "a", "d2", "y"]
    assert role_after("matmul", ["h"]) == role_after("transpose", ["x"]) == ""


def test_an_op_takes_the_strongest_origin_and_x_makes_activations():
    assert derived("input") == "activation"
    assert [derived(o) for o in ORIGINS] == list(ORIGINS)
    assert stronger("constant", "parameter") == stronger("parameter", "constant") == "parameter"
    assert stronger("activation", "parameter") == "activation"


def test_block_runs_close_a_rerun_inside_a_rerun_first_with_its_own_matmuls():
    runs = BlockRuns()
    assert not runs.leave("forward")  # nothing open: the watch began inside the block
    runs.enter(0)
    runs.open[-1][1].append("x@W1")
    runs.enter("cell")
    runs.open[-1][1].extend(["x@W1", "a@W2"])
    assert runs.leave("backward", index=lambda key: 7)
    assert runs.leave("backward")
    assert [(e.block, e.phase, e.ran) for e in runs.evaluations] == [
        (7, "backward", ("x@W1", "a@W2")),
        (0, "backward", ("x@W1",)),
    ]
