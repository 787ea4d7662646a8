"""A process port that crashes, hangs, spins, breaks the protocol or prints: each is reported as
what it is, naming the request, in bounded time (the adapter's timeout, or the suite's).

The misbehaving ports are the C++ test port with `--fault=forward:KIND`: `hello` and every
other request work, `forward` misbehaves. No assertion is on time: the bound is the timeout
each test sets, and pytest-timeout stops a test that would wait for ever.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import implementations
from implementations.process import (
    ProcessPort,
    ProcessPortCrashed,
    ProcessPortTimeout,
    ProtocolViolation,
)
from implementations.stacks.numpy import canonical_params
from tests.support.helpers import run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="17 s alone: process ports that crash, hang or spin, each waited out"),
]

PARAMS = canonical_params(0, 3, 2)
X = np.array([0.5, -1.0, 2.0], np.float32)


def _port(binary, fault: str = "", timeout: float = 30.0) -> ProcessPort:
    argv = [str(binary)]
    name = "cpp_port"
    if fault:
        name = f"cpp_{fault}"
        argv += [f"--name={name}", f"--fault=forward:{fault}"]
    return ProcessPort(name, argv, timeout=timeout)


def test_a_crash_names_the_request_and_the_signal_and_the_next_call_restarts(cpp_port_binary):
    port = _port(cpp_port_binary, "crash")
    with pytest.raises(ProcessPortCrashed, match=r"killed by SIGABRT\) before answering 'forward'"):
        port.forward(PARAMS, X)
    # A fresh process answers what does not crash it.
    assert port.init_params(0, 3, 2).w1.shape == (3, 2)
    port.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault", ["hang", "spin"])
def test_a_hang_or_a_busy_loop_is_stopped_at_the_timeout_naming_the_request(cpp_port_binary, fault):
    port = _port(cpp_port_binary, fault, timeout=3)
    with pytest.raises(ProcessPortTimeout, match=r"no answer to 'forward' within 3 s; killed"):
        port.forward(PARAMS, X)
    process = port._child
    assert process is None  # killed and dropped; the next call starts another
    assert port.init_params(0, 3, 2).w1.shape == (3, 2)
    port.close()


def test_a_protocol_violation_names_the_request_and_what_was_wrong(cpp_port_binary):
    port = _port(cpp_port_binary, "violation")
    with pytest.raises(ProtocolViolation, match=r"'y' in the answer to 'forward'.*3 bytes"):
        port.forward(PARAMS, X)
    port.close()


def test_noise_on_stdout_goes_to_stderr_and_the_answer_still_arrives(cpp_port_binary, capfd):
    port = _port(cpp_port_binary, "noise")
    quiet = _port(cpp_port_binary)
    np.testing.assert_array_equal(port.forward(PARAMS, X), quiet.forward(PARAMS, X))
    out, err = capfd.readouterr()
    assert "a library that prints on stdout" in err
    assert "a library that prints on stdout" not in out
    port.close()
    quiet.close()


def test_an_error_type_outside_the_protocol_is_a_violation(tmp_path):
    script = tmp_path / "port.sh"
    script.write_text(
        "#!/bin/sh\n"
        "read line\n"
        'echo \'{"id":1,"result":{"name":"sh_port","framework":"sh","versions":{},'
        '"protocol":1}}\'\n'
        "read line\n"
        'echo \'{"id":2,"error":{"type":"KeyError","message":"w1"}}\'\n'
        "read line\n"
    )
    script.chmod(0o755)
    port = ProcessPort("sh_port", [str(script)], timeout=30)
    with pytest.raises(ProtocolViolation, match=r"'forward'.*type 'KeyError'"):
        port.forward(PARAMS, X)


def test_a_wrong_id_is_a_violation(tmp_path):
    script = tmp_path / "port.sh"
    script.write_text(
        "#!/bin/sh\n"
        "read line\n"
        'echo \'{"id":1,"result":{"name":"sh_port","framework":"sh","versions":{},'
        '"protocol":1}}\'\n'
        "read line\n"
        'echo \'{"id":7,"result":{}}\'\n'
        "read line\n"
    )
    script.chmod(0o755)
    port = ProcessPort("sh_port", [str(script)], timeout=30)
    with pytest.raises(ProtocolViolation, match=r"'forward' \(request 2\) carries id 7"):
        port.forward(PARAMS, X)


def _sh_port(tmp_path, hello_extra: str, evidence: str = "") -> ProcessPort:
    script = tmp_path / "port.sh"
    script.write_text(
        "#!/bin/sh\n"
        "read line\n"
        'echo \'{"id":1,"result":{"name":"sh_port","framework":"sh","versions":{},'
        f'"protocol":1{hello_extra}}}}}\'\n'
        "read line\n"
        f'echo \'{{"id":2,"result":{evidence}}}\'\n'
        "read line\n"
    )
    script.chmod(0o755)
    return ProcessPort("sh_port", [str(script)], timeout=30)


RECORD = (
    '{"instrument":"sh","saved":[{"shape":[5],"dtype":"float32","origin":"input"%s}],'
    '"recomputed":{}%s}'
)


def test_without_policies_in_hello_a_port_declares_none_and_full(tmp_path):
    port = _sh_port(tmp_path, "", RECORD % ("", ""))
    assert port.policies == {"none": "checkpoint: false", "full": "checkpoint: true"}
    assert set(port.inexpressible) == {"save_dots", "save_named", "offload_dots", "budget"}
    assert port.instrument_family == "sh"  # the framework, when hello names no family
    record = port.backward_record(PARAMS, X, checkpoint=True)
    # role and backward_matmuls are optional: absent, (j) says it cannot name the role
    assert record.saved[0].role == ""
    assert record.backward_matmuls is None


def test_roles_and_backward_matmuls_are_read_from_the_record(tmp_path):
    extra = ',"instrument_family":"mine"'
    port = _sh_port(tmp_path, extra, RECORD % (',"role":"x"', ',"backward_matmuls":5'))
    assert port.instrument_family == "mine"
    record = port.backward_record(PARAMS, X, checkpoint=True)
    assert record.saved_roles == {"x"}
    assert record.backward_matmuls == 5


def test_a_role_outside_the_vocabulary_is_a_violation(tmp_path):
    port = _sh_port(tmp_path, "", RECORD % (',"role":"z"', ""))
    with pytest.raises(ProtocolViolation, match=r"'evidence'.*role must be one of"):
        port.backward_record(PARAMS, X, checkpoint=True)


def test_a_protocol_1_hello_declaring_a_policy_the_wire_cannot_carry_is_a_violation(tmp_path):
    extra = ',"policies":{"none":"n","full":"f","save_dots":"d"}'
    with pytest.raises(ProtocolViolation, match="declares save_dots: protocol 1 carries"):
        _sh_port(tmp_path, extra)


def test_a_missing_program_is_unavailable_with_the_reason(monkeypatch):
    monkeypatch.setitem(implementations.BUILTIN, "ghost", "exec:remat-no-such-program --flag")
    implementations.load.cache_clear()
    try:
        with pytest.raises(implementations.PortUnavailable) as caught:
            implementations.load("ghost")
    finally:
        implementations.load.cache_clear()
    assert caught.value.missing
    assert "needs 'remat-no-such-program', not found on PATH" in caught.value.reason


def test_a_port_that_calls_itself_otherwise_is_broken(cpp_port_binary, monkeypatch):
    monkeypatch.setitem(implementations.BUILTIN, "other_name", f"exec:{cpp_port_binary}")
    implementations.load.cache_clear()
    try:
        with pytest.raises(implementations.PortUnavailable) as caught:
            implementations.load("other_name")
    finally:
        implementations.load.cache_clear()
    assert not caught.value.missing
    assert "'hello' says the port is 'cpp_port', registered as 'other_name'" in caught.value.reason


@pytest.mark.timeout(600)
def test_the_suite_reports_each_fault_as_what_it_is_with_the_ports_stderr(cpp_distribution):
    """A crash reads crashed, with its signal; a sleeping hang and a busy loop read timeout,
    both stopped by the adapter's own watch at --timeout (the worker's watch would take a
    computing process for a compile, up to 10 x); every fault's message carries the port's
    last stderr line (each faulty port says "about to <fault>" there first)."""
    names = ["cpp_crash", "cpp_hang", "cpp_spin", "cpp_violation"]
    args = ["-m", "conformance", "run", "--profile", "dev", "--no-mutants", "--json"]
    args += ["--property", "b", "--timeout", "5", "--jobs", "2"]
    for name in names:
        args += ["--implementation", name]
    result = run_python(args, cpp_distribution, timeout=600)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    ports = {port["name"]: port for port in report["ports"]}
    outcomes = {name: port["outcomes"][0] for name, port in ports.items()}
    assert outcomes["cpp_crash"]["status"] == "crashed"
    assert "ProcessPortCrashed" in outcomes["cpp_crash"]["message"]
    assert "killed by SIGABRT) before answering 'forward'" in outcomes["cpp_crash"]["message"]
    for name in ("cpp_hang", "cpp_spin"):
        assert outcomes[name]["status"] == "timeout", outcomes[name]
        # The adapter's watch, whatever the load: not the worker's (it says "computing").
        assert "no answer to 'forward' within 5 s; killed" in outcomes[name]["message"]
    assert outcomes["cpp_violation"]["status"] == "fail"
    assert "ProtocolViolation" in outcomes["cpp_violation"]["message"]
    for name in names:
        fault = name.split("_", 1)[1]
        assert f"cpp port: about to {fault} at forward" in outcomes[name]["message"], name


def test_a_protocol_1_port_that_refuses_2_is_asked_again_in_1(cpp_port_binary):
    port = _port(cpp_port_binary)
    assert port.protocol == 1
    assert set(port.policies) == {"none", "full"}
    assert port.inexpressible["save_dots"] == "protocol 1 carries checkpoint on/off only"
    assert port.expectations["full"].roles == {"x"}  # declared in its hello
    port.close()


def test_protocol_2_carries_the_policy_by_name(tmp_path):
    script = tmp_path / "port.sh"
    script.write_text(
        "#!/bin/sh\n"
        "read line\n"
        'echo \'{"id":1,"result":{"name":"sh_port","framework":"sh","versions":{},'
        '"protocol":2,"policies":{"none":"n","full":"f","save_named":"h"}}}\'\n'
        "read line\n"
        f'echo "$line" > {tmp_path}/request\n'
        'echo \'{"id":2,"result":{"y":{"dtype":"float32","shape":[2],"data":"AAAAAAAAAAA="}}}\'\n'
        "read line\n"
    )
    script.chmod(0o755)
    from implementations.policies import Policy

    port = ProcessPort("sh_port", [str(script)], timeout=30)
    assert port.protocol == 2
    assert port.inexpressible["save_dots"] == "not declared in the port's hello"
    port.forward(PARAMS, X, checkpoint=Policy("save_named"))
    request = json.loads((tmp_path / "request").read_text())
    assert (request["policy"], request["checkpoint"]) == ("save_named", True)
    with pytest.raises(ValueError, match=r"checkpoint=save_dots: port sh_port cannot express"):
        port.forward(PARAMS, X, checkpoint=Policy("save_dots"))


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (3, "3"),
        (-1.0, "-1"),
        (2**63, "9223372036854775808"),
        (True, True),
        (np.bool_(False), False),
        (1.5, "1.5"),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
        (np.float32(0.5), "0.5"),
        (None, None),
        (np.array([3]), [3]),
        (np.array(4), "4"),
    ],
)
def test_integer_arguments_reach_the_port_as_json_says_them(value, wire):
    assert ProcessPort._integer(value, "seed") == wire


def test_what_json_cannot_carry_is_refused_by_the_adapter():
    with pytest.raises(TypeError, match="seed must be an integer scalar"):
        ProcessPort._integer("3", "seed")
    with pytest.raises(TypeError, match="x must have a real"):
        ProcessPort._x(np.array([1.0, None], dtype=object))
    assert ProcessPort._x(np.array([True, False]))["dtype"] == "bool"
    assert ProcessPort._x(np.ones((2, 3), np.float32))["shape"] == [2, 3]
    assert ProcessPort._x(np.float32(1.0))["shape"] == []
