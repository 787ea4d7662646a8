"""Issue 61, case 8: a process port that floods is bounded (docs/PROTOCOL.md, "What the adapter
does with a misbehaving port"): the longest line, the most bytes in one request and the
captured output each have a limit (`REMAT_PROCESS_MAX_LINE`, `REMAT_PROCESS_MAX_REQUEST`,
`REMAT_PROCESS_MAX_CAPTURED`); a port past the first two is killed and its call is a
`ProtocolViolation` saying which; noise on stdout is not a start's progress.

The ports are a small Python script; the limits are set small, so each test is quick. Each
flood is itself bounded (a few MB, then a sleep), so that the code before the limits fails
these tests at a timeout rather than filling the machine's memory.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from implementations.process import ProcessPort, ProcessPortTimeout, ProtocolViolation, adapter
from implementations.stacks.numpy import canonical_params

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

PARAMS = canonical_params(0, 3, 2)
X = np.array([0.5, -1.0, 2.0], np.float32)

PORT = r"""
import json, sys, time

how = sys.argv[1]
out = sys.stdout.buffer


def answer(ident, result):
    out.write(json.dumps({"id": ident, "result": result}).encode() + b"\n")
    out.flush()


for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "hello":
        if how == "hello_noise":  # noise on stdout, never an answer
            while True:
                out.write(b"loading...\n")
                out.flush()
                time.sleep(0.05)
        if how == "hello_stderr":  # 100 KB of log lines, then the answer
            for i in range(2000):
                sys.stderr.write(f"log line {i:04d} " + "." * 40 + "\n")
            sys.stderr.flush()
        answer(request["id"], {"name": "flood_port", "framework": "python", "versions": {},
                               "protocol": 1})
    elif request["op"] == "forward":
        if how == "no_newline":  # 8 MB without a newline, then nothing
            for _ in range(128):
                out.write(b"x" * 65536)
            out.flush()
        elif how == "noise_lines":  # 4 MB of noise lines, then nothing
            for _ in range(65536):
                out.write(b"noise " * 10 + b"\n")
            out.flush()
        time.sleep(600)
    elif request["op"] == "shutdown":
        break
"""


def _port(tmp_path, how: str, timeout: float = 20) -> ProcessPort:
    script = tmp_path / "flood_port.py"
    script.write_text(PORT)
    return ProcessPort("flood_port", [sys.executable, str(script), how], timeout=timeout)


@pytest.mark.timeout(120)
def test_a_line_without_end_is_stopped_at_the_longest_line(tmp_path, monkeypatch):
    monkeypatch.setenv("REMAT_PROCESS_MAX_LINE", "4096")
    port = _port(tmp_path, "no_newline")
    with pytest.raises(ProtocolViolation, match=r"stopped while answering 'forward': it wrote a "
                       r"line of over 4096 bytes on stdout \(the limit: REMAT_PROCESS_MAX_LINE\); "
                       r"killed"):  # fmt: skip
        port.forward(PARAMS, X)
    assert port._child is None  # killed; the next call starts another
    port.close()


@pytest.mark.timeout(120)
def test_noise_past_the_most_bytes_of_a_request_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("REMAT_PROCESS_MAX_REQUEST", "65536")
    monkeypatch.setenv("REMAT_PROCESS_MAX_CAPTURED", "1000")
    port = _port(tmp_path, "noise_lines")
    with pytest.raises(ProtocolViolation, match=r"it wrote over 65536 bytes in one request "
                       r"\(the limit: REMAT_PROCESS_MAX_REQUEST\); killed"):  # fmt: skip
        port.forward(PARAMS, X)
    port.close()


@pytest.mark.timeout(120)
def test_captured_output_stops_at_its_cap(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("REMAT_PROCESS_MAX_CAPTURED", "10000")
    port = _port(tmp_path, "hello_stderr")
    assert port.hello["name"] == "flood_port"  # past the cap is not a fault: it answered
    port.close()
    captured = capfd.readouterr().err
    assert "log line 0000" in captured
    assert "log line 1999" not in captured
    assert len(captured) < 10000 + 500
    assert captured.rstrip().endswith(
        "[flood_port] more output not kept: past 10000 bytes (REMAT_PROCESS_MAX_CAPTURED)"
    )


@pytest.mark.timeout(120)
def test_noise_on_stdout_is_not_a_starts_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(adapter, "START_LIMIT", 30.0)  # the code before: noise was progress
    with pytest.raises(ProcessPortTimeout, match=r"the last 1 s of them without a line"):
        _port(tmp_path, "hello_noise", timeout=1)


def test_the_limits_are_documented_and_a_bad_setting_names_its_variable(monkeypatch):
    from tests.support.helpers import ROOT

    doc = (ROOT / "docs" / "PROTOCOL.md").read_text()
    section = doc.split("## What the adapter does with a misbehaving port")[1].split("\n## ")[0]
    for variable, default in (adapter.MAX_LINE, adapter.MAX_REQUEST, adapter.MAX_CAPTURED):
        assert f"`{variable}`" in section
        assert f"{default >> 20} MiB" in section
    monkeypatch.setenv("REMAT_PROCESS_MAX_LINE", "lots")
    with pytest.raises(ValueError, match="REMAT_PROCESS_MAX_LINE='lots'"):
        adapter._bytes(adapter.MAX_LINE)
