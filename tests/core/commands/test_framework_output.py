"""Frameworks' log lines are kept out of the user's terminal (issue 60, item 4): native
writes to file descriptors 1 and 2 go to a log while the command's own output reaches the
user; `--verbose` shows them; a failed command shows the log's last lines."""

from __future__ import annotations

import os
import sys

import pytest

from conformance import cli
from conformance.commands import bench
from conformance.terminal import noise

NATIVE = b"I0000 port.cc:153] oneDNN custom operations are on.\n"


def _speak() -> None:
    os.write(2, NATIVE)  # as a framework's C++ does
    print("a framework's Python print", file=noise.sink())
    print("the command's own line", file=sys.stderr)
    print("the report")


def test_native_lines_go_to_the_log_and_the_commands_output_to_the_user(capfd):
    with noise.kept() as log:
        _speak()
        sys.stdout.flush()
        os.fsync(1)
        kept = log.read_text()
    out, err = capfd.readouterr()
    assert out == "the report\n"
    assert err == "the command's own line\n"
    assert "oneDNN" in kept
    assert "a framework's Python print" in kept
    assert not log.exists()  # nothing left in the temporary directory


def test_verbose_shows_everything(capfd):
    with noise.kept(verbose=True) as log:
        _speak()
    assert log is None
    err = capfd.readouterr().err
    assert "oneDNN" in err
    assert "a framework's Python print" in err


@pytest.mark.parametrize(("code", "shown"), [(0, False), (2, True)])
def test_the_cli_keeps_a_commands_framework_output(code, shown, capfd, monkeypatch):
    def run(args):
        _speak()
        return code

    monkeypatch.setattr(bench, "run", run)
    assert cli.main(["bench", "--framework", "jax"]) == code
    out, err = capfd.readouterr()
    assert out == "the report\n"
    assert ("oneDNN" in err) == shown  # after a failure: the log's tail, and where it is
    assert err.startswith("the command's own line\n")


def test_the_cli_shows_it_with_verbose(capfd, monkeypatch):
    monkeypatch.setattr(bench, "run", lambda args: (_speak(), 0)[1])
    assert cli.main(["bench", "--framework", "jax", "--verbose"]) == 0
    assert "oneDNN" in capfd.readouterr().err


def test_a_command_stopped_by_an_exception_shows_the_tail_and_leaves_no_log(capfd):
    def stopped() -> None:
        with noise.kept() as log:
            logs.append(log)
            os.write(2, NATIVE)
            raise KeyboardInterrupt

    logs = []
    with pytest.raises(KeyboardInterrupt):
        stopped()
    (log,) = logs
    assert "oneDNN" in capfd.readouterr().err
    assert not log.exists()
