"""Process ports: fixtures that build the C++ test port, or skip with the reason.

The folder holds tests of the protocol adapter (with the C++ port of
`cpp_port/`, written from docs/PROTOCOL.md alone, and its faults), of the
tfjs port (Node), and of tfjs in a browser (Chromium). Each test skips, with
the reason, where its compiler, runtime or browser is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.helpers import make_distribution

CPP_SOURCE = Path(__file__).parent / "cpp_port" / "port.cpp"
#: The C++ port's registrations: the port itself, and one per fault at `forward`.
FAULTS = ("crash", "hang", "spin", "violation", "noise")


@pytest.fixture(scope="session")
def cpp_port_binary(tmp_path_factory) -> Path:
    """The C++ port, compiled now (g++ -std=c++17), or a skip where there is no g++."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not installed: the C++ process port cannot be built")
    binary = tmp_path_factory.mktemp("cpp_port") / "port"
    subprocess.run(
        [compiler, "-O1", "-std=c++17", "-ffp-contract=off", str(CPP_SOURCE), "-o", str(binary)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return binary


@pytest.fixture(scope="session")
def cpp_distribution(cpp_port_binary, tmp_path_factory) -> Path:
    """A directory for PYTHONPATH whose dist-info registers the C++ port (`cpp_port`) and its
    faulty twins (`cpp_crash`, ...) through `exec:` entry points, as a user would."""
    points = {"cpp_port": f"exec:{cpp_port_binary}"}
    for fault in FAULTS:
        name = f"cpp_{fault}"
        points[name] = f"exec:{cpp_port_binary} --name={name} --fault=forward:{fault}"
    return make_distribution(tmp_path_factory.mktemp("cpp_dist"), "cpp-port", points, {})


@pytest.fixture(scope="session")
def node() -> str:
    """The path of `node`, or a skip where Node.js is not installed."""
    found = shutil.which("node")
    if found is None:
        pytest.skip("Node.js is not installed: the tfjs port is unavailable")
    return found
