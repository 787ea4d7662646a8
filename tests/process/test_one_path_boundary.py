"""The trust boundary of one path: a process port whose evidence is an honest checkpoint's
while its values come from another path, one that never checkpoints, is consistent on every
request; the adapter sees answers only, so it passes (e), marked self-reported
(docs/PROTOCOL.md says so)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

from conformance.checking import provenance
from conformance.checking.properties.e_evidence import check_evidence
from conformance.mutants import wire_port
from implementations import manifests
from implementations.contract import MEASURED_BY_PORT
from implementations.process import ProcessPort
from tests.support import reference

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


class _Case:
    params = reference.random_params(np.random.default_rng(4), 3, 4)
    x = np.array([0.25, -1.5, 2.0], np.float32)


def test_values_off_another_path_pass_e_as_the_port_s_own_word():
    argv = [sys.executable, str(Path(wire_port.__file__).resolve()), "--name=two_paths"]
    served = f"--serve={manifests.CANONICAL_PORT}"
    port = ProcessPort("two_paths", [*argv, served, "--values-without-checkpoint"])
    try:
        check_evidence(port, None, (_Case(), 3))  # consistent: the adapter cannot tell
        assert provenance.measured_by(port) == MEASURED_BY_PORT
        assert provenance.describe(port)["evidence"].startswith("self-reported")
    finally:
        port.close()
