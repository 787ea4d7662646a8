"""A process port (tfjs, a user's) says why (l) has nothing to check: the protocol carries no
step of the block with variables and RNGs. Starts no process."""

from __future__ import annotations

from conformance.checking.properties import l_state
from implementations.process.adapter import ProcessPort
from implementations.process.wire import PROTOCOL_VERSIONS


def test_a_process_port_reads_not_expressible_naming_the_protocol():
    port = object.__new__(ProcessPort)  # the class's declaration, without starting a program
    reason = l_state.not_expressible(port)
    assert reason is not None
    assert reason.startswith("not expressible: the process protocol")
    assert f"protocols 1 to {max(PROTOCOL_VERSIONS)}" in reason
    assert "state_step" in reason
