"""Protocol 3 carries nesting: a process port declares its composition cases in its `hello`
and runs a request's `nesting`; property (k) holds it like a Python port. A protocol-2 port
still runs, with (k) not expressible, and says why."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from conformance.checking.properties import k_composition as records
from conformance.checking.properties.k_composition import check_composition, prepare_composition
from conformance.mutants import wire_port
from implementations import load
from implementations.composition import Nesting
from implementations.process import ProcessPort
from tests.support import reference

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

WIRE = [sys.executable, str(Path(wire_port.__file__).resolve())]


class _Case:
    params = reference.random_params(np.random.default_rng(6), 3, 4)
    x = np.array([0.25, -1.5, 2.0], np.float32)
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)


def test_a_protocol_3_port_runs_each_case_it_declares():
    port = ProcessPort("wire_torch", [*WIRE, "--name=wire_torch", "--serve=pytorch"])
    try:
        assert port.protocol == 3
        assert set(port.compositions) == {"once", "twice", "under_trainer"}
        record = port.backward_record(_Case.params, _Case.x, checkpoint=Nesting("twice"))
        assert (sorted(record.saved_roles), record.forward_matmuls) == (["x"], 2)
        port.instrument_family = "torch"  # held to the torch table, as the served port is
        check_composition(port, prepare_composition(load("pytorch"), _Case()), _Case())
    finally:
        port.close()


def test_a_protocol_2_port_runs_with_k_not_expressible():
    argv = [*WIRE, "--name=wire_old", "--serve=pytorch", "--ignore-policy"]
    port = ProcessPort("wire_old", argv)
    try:
        assert port.protocol == 2
        assert records.not_expressible(port) == (
            "not expressible: twice: protocol 2 carries no nesting (protocol 3 does); "
            "under_trainer: protocol 2 carries no nesting (protocol 3 does)"
        )
        with pytest.raises(ValueError, match="checkpoint=twice: port wire_old cannot"):
            port.forward(_Case.params, _Case.x, checkpoint=Nesting("twice"))
    finally:
        port.close()
