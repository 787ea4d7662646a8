"""A process port offers the block with variables and RNGs only where its `hello` advertises
`state_variants` (docs/PROTOCOL.md, *Randomness and state*): without them (l) reads not
expressible, naming the protocol; a malformed table breaks the protocol; a bad argument is
refused, naming it, before anything is sent. Starts no process."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conformance.checking.properties import l_state
from implementations.process import adapter
from implementations.process.adapter import ProcessPort
from implementations.process.wire import PROTOCOL_VERSIONS, ProtocolViolation

HELLO = {"name": "p", "framework": "mine", "versions": {}, "protocol": 3}


def _port(hello: dict, sent: list[str]) -> ProcessPort:
    """A port whose hello is `hello` and whose requests are recorded in `sent`, no process."""
    port = adapter.ProcessPort.__new__(adapter.ProcessPort)
    port._start = lambda: dict(hello)
    port._request = lambda op, **arguments: sent.append(op) or {}
    port.close = lambda: None
    adapter.ProcessPort.__init__(port, "p", [sys.executable])
    return port


def test_a_process_port_reads_not_expressible_naming_the_protocol():
    port = object.__new__(ProcessPort)  # the class's declaration, without starting a program
    reason = l_state.not_expressible(port)
    assert reason is not None
    assert reason.startswith("not expressible: the process protocol")
    assert f"protocols 1 to {max(PROTOCOL_VERSIONS)}" in reason
    assert "advertises no state_variants" in reason


def test_a_hello_without_state_variants_offers_none_and_one_with_them_offers_them():
    sent: list[str] = []
    assert l_state.not_expressible(_port(HELLO, sent)).endswith("advertises no state_variants")
    port = _port({**HELLO, "state_variants": {"default": "by hand"}}, sent)
    assert l_state.not_expressible(port) is None
    assert port.state_variants == {"default": "by hand"}


@pytest.mark.parametrize("table", [["default"], {"default": ""}, {"default": 1}])
def test_a_malformed_state_variants_breaks_the_protocol(table):
    with pytest.raises(ProtocolViolation, match="state_variants"):
        _port({**HELLO, "state_variants": table}, [])


def test_bad_arguments_are_named_and_never_sent():
    sent: list[str] = []
    port = _port({**HELLO, "state_variants": {"default": "by hand"}}, sent)
    x, cotangent = np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)
    for bad, word in (
        ({"rate": 1.0}, "rate"),
        ({"variant": "nope"}, "variant"),
        ({"cotangent": cotangent[:, :2]}, "cotangent"),
        ({"x": x[:1]}, "x"),
        ({"seed": -1}, "seed"),
    ):
        arguments = {"seed": 0, "x": x, "features": 4, "rate": 0.5, "cotangent": cotangent}
        with pytest.raises(ValueError, match=word):
            port.state_step(**{**arguments, **bad})
    assert sent == []
    no_variants = _port(HELLO, sent)
    with pytest.raises(ValueError, match="variant"):
        no_variants.state_step(0, x, 4, 0.5, cotangent)
    assert sent == []
