"""What a framework writes in the environment for itself is neither a port's change nor a
worker's inheritance (`Manifest.process_variables`).

torch's inductor writes `_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR`, an address in its own
process, before it loads each compiled library. A pytest session that compiled with inductor
passed its value to every port worker it started; the worker's inductor wrote its own, the
guard read a port changing the environment, and `torch_compile` got a fresh worker (and
compiled again) for every property: 91 s of the test command instead of 18.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from conformance.running import process_state
from implementations import manifests

INDUCTOR = "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR"


def test_the_torch_stack_declares_inductor_s_address():
    (torch,) = [m for m in manifests.manifests() if m.stack == "torch"]
    assert INDUCTOR in torch.process_variables
    assert INDUCTOR in manifests.process_variables()


def test_inductor_writes_the_variable_as_the_manifest_says():
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    source = (Path(spec.origin).parent / "_inductor" / "codecache.py").read_text()
    assert f'os.environ["{INDUCTOR}"] = ' in source


def test_a_worker_starts_without_the_parent_s_address(monkeypatch):
    monkeypatch.setenv(INDUCTOR, "140430182894624")
    monkeypatch.setenv("REMAT_SOMETHING_OF_THE_USER", "kept")
    environment = process_state.worker_environment()
    assert INDUCTOR not in environment
    assert environment["REMAT_SOMETHING_OF_THE_USER"] == "kept"


def test_the_framework_rewriting_it_is_no_change_but_a_port_s_variable_is(monkeypatch):
    monkeypatch.setenv(INDUCTOR, "140430182894624")
    monkeypatch.setenv("REMAT_SOMETHING_OF_THE_USER", "before")
    before = process_state.capture()
    monkeypatch.setenv(INDUCTOR, "139926629436448")
    assert process_state.changes(before, process_state.capture()) == ""
    monkeypatch.setenv("REMAT_SOMETHING_OF_THE_USER", "after")
    assert process_state.changes(before, process_state.capture()) == (
        "environment: REMAT_SOMETHING_OF_THE_USER 'before' -> 'after'"
    )
