"""Issue 61, case 11: a stdout that cannot encode the reports' characters (an ASCII locale
without Python's UTF-8 mode) gets ASCII stand-ins, for every command; none fails on one."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.terminal import streams

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[3]
RUN_REPORT = ROOT / "tests" / "data" / "report" / "run.json"


def _ascii_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    return env | {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "command", [["list", "--plain"], ["list"], ["merge", str(RUN_REPORT), "--plain"]]
)
def test_commands_print_ascii_where_stdout_is_ascii(command):
    result = subprocess.run(
        [sys.executable, "-m", "conformance", *command],
        capture_output=True,
        env=_ascii_environment(),
        cwd=ROOT,
        timeout=110,
    )
    assert b"UnicodeEncodeError" not in result.stderr, result.stderr.decode(errors="replace")
    assert result.returncode in (0, 1), result.stderr.decode(errors="replace")
    assert result.stdout.strip(), "it printed nothing"
    assert result.stdout.isascii(), result.stdout
    if command[0] == "merge":  # the matrix is there, its marks in ASCII
        assert b"flax_linen" in result.stdout
        assert b"+20" in result.stdout


def test_stand_ins_are_ascii_and_readable():
    assert streams.stand_in("·") == "-"
    assert streams.stand_in("✓") == "+"
    assert streams.stand_in("é") == "e"
    assert streams.stand_in("\u00a0") == " "
    assert streams.stand_in("\u4e00") == "?"
    assert all(value.isascii() for value in streams.STAND_INS.values())


def test_a_stream_that_can_encode_is_left_alone(monkeypatch):
    utf8 = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    ascii_ = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", utf8)
    monkeypatch.setattr(sys, "stderr", ascii_)
    streams.degrade_to_ascii()
    assert utf8.errors == "strict"
    assert ascii_.errors == streams.HANDLER
    ascii_.write("✓20 · 0.04 ± 1")
    ascii_.flush()
    assert ascii_.buffer.getvalue() == b"+20 - 0.04 +- 1"
