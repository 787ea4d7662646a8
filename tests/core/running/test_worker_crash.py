"""An xdist worker that dies ends the test run red, naming the test, and never hangs it.

Run with this project's xdist settings (pyproject's addopts, less the conformance plugin's
option) on three small test files, one of whose tests ends its worker's process.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib

import pytest

from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

FILES = {
    "test_first.py": "def test_one():\n    pass\n",
    "test_dies.py": "import os\n\ndef test_ends_its_worker():\n    os._exit(1)\n",
    "test_last.py": "def test_two():\n    pass\n",
}


def _xdist_options() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    options = shlex.split(config["ini_options"]["addopts"])
    return [option for option in options if not option.startswith("--conformance-")]


def test_a_dead_worker_ends_the_run_red_and_names_the_test(tmp_path):
    for name, source in FILES.items():
        (tmp_path / name).write_text(source)
    command = [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider"]
    command += ["-o", "addopts=", "--rootdir", str(tmp_path), *_xdist_options()]
    # The timeout is a backstop: with the worker replaced this run never ended.
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "crashed while running 'test_dies.py::test_ends_its_worker'" in done.stdout
    # Run once, not again in each replacement worker.
    assert done.stdout.count("FAILED test_dies.py::test_ends_its_worker") == 1, done.stdout
