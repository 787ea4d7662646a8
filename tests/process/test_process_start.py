"""How long a process port may take to start: `hello` is waited for as long as the port logs
(a first start may install its runtime, as tfjs's `npm ci` does), until a stretch of silence
as long as the timeout (`REMAT_PROCESS_TIMEOUT`, else 120 s), or `adapter.START_LIMIT` in all.

No assertion is on time. A logging start outlasts its timeout many times over, by its own
clock, so only the progress rule lets it through; a silent or endless one never answers."""

from __future__ import annotations

import warnings

import pytest

from implementations.contract import PortWarning
from implementations.process import ProcessPort, ProcessPortTimeout, adapter

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

HELLO = '{"id":1,"result":{"name":"sh_port","framework":"sh","versions":{},"protocol":1}}'


def _port(tmp_path, start: str, timeout: float) -> ProcessPort:
    """A shell port that runs `start` after reading `hello`, then answers it."""
    script = tmp_path / "port.sh"
    script.write_text(f"#!/bin/sh\nread line\n{start}\necho '{HELLO}'\nread line\n")
    script.chmod(0o755)
    return ProcessPort("sh_port", [str(script)], timeout=timeout)


# Logs a line every 0.1 s until 3 s have passed by the port's own clock: three times the
# timeout below, in gaps ten times shorter than it.
LOGGING = (
    "start=$(date +%s%N)\n"
    "while [ $(( $(date +%s%N) - start )) -lt 3000000000 ]; do\n"
    "  echo 'installing the runtime' >&2; sleep 0.1\n"
    "done"
)


@pytest.mark.timeout(120)
def test_a_start_that_logs_as_it_installs_is_waited_for_past_its_timeout(tmp_path):
    port = _port(tmp_path, LOGGING, timeout=1)
    assert port.hello["name"] == "sh_port"
    port.close()


@pytest.mark.timeout(120)
def test_a_start_that_falls_silent_is_stopped_a_timeout_after_its_last_line(tmp_path):
    with pytest.raises(ProcessPortTimeout, match=r"the last 1 s of them without a line") as err:
        _port(tmp_path, "echo 'installing the runtime' >&2\nexec sleep 600", timeout=1)
    assert "installing the runtime" in str(err.value)  # its stderr, for the reader


@pytest.mark.timeout(120)
def test_a_start_that_logs_for_ever_ends_at_the_start_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(adapter, "START_LIMIT", 3.0)
    endless = "while true; do echo 'still installing' >&2; sleep 0.1; done"
    with pytest.raises(ProcessPortTimeout, match=r"within 3 s, the limit of a start"):
        _port(tmp_path, endless, timeout=1)


def test_a_warning_line_on_stderr_is_a_port_warning_and_other_lines_are_not(tmp_path):
    """A start's line for the user (a broken cache, installed again) reaches the caller, and
    through it a run's stderr; the port's other lines stay its own (docs/PROTOCOL.md)."""
    start = (
        "echo 'installing the runtime' >&2\n"
        f"echo '{adapter.WARNING_PREFIX}the cached runtime does not load: installed again' >&2"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        port = _port(tmp_path, start, timeout=60)
        port.close()  # the port's stderr read to its end
    said = [str(w.message) for w in caught if issubclass(w.category, PortWarning)]
    assert said == ["sh_port: the cached runtime does not load: installed again"]


def test_the_timeout_is_120_s_unless_the_variable_sets_it_and_a_start_900_s_at_most(monkeypatch):
    assert adapter.START_LIMIT == 900.0  # as docs/PROTOCOL.md says
    monkeypatch.delenv("REMAT_PROCESS_TIMEOUT", raising=False)
    assert adapter._timeout() == adapter.DEFAULT_TIMEOUT == 120.0
    monkeypatch.setenv("REMAT_PROCESS_TIMEOUT", "600")
    assert adapter._timeout() == 600.0


@pytest.mark.parametrize("setting", ["0", "-5", "soon"])
def test_a_bad_setting_is_an_error_that_names_the_variable(monkeypatch, setting):
    monkeypatch.setenv("REMAT_PROCESS_TIMEOUT", setting)
    with pytest.raises(ValueError, match="REMAT_PROCESS_TIMEOUT must be a positive number"):
        adapter._timeout()
