"""Keras's block with variables and RNGs, one backend per process: on TensorFlow `keras.remat`
over `Dropout` draws a fresh mask and updates the statistics twice, as declared, and
`stateless_call` is the fix beside it; on JAX it replays and updates once."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from implementations.stacks.keras.expectations import STATEFUL
from implementations.stateful import declaration_problems
from tests.support.helpers import ROOT

#: A fresh interpreter per backend (Keras keeps its first backend for the process).
BLOCK_PROCESS = pytest.mark.slow(
    reason="41 s alone for the two backends: Keras and each backend load in a new process"
)


def held(backend: str) -> dict[str, float]:
    """The probe's variants held on `backend`, variant -> gradient gap (on vs off)."""
    for module in ("keras", backend):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.keras_stateful_probe", backend],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.split() for line in done.stdout.splitlines() if line.startswith("held ")]
    return {words[2]: float(words[4]) for words in lines}


@pytest.mark.subprocess
@BLOCK_PROCESS
def test_keras_on_tensorflow_does_what_it_declares_and_the_fix_is_right():
    gaps = held("tensorflow")
    assert set(gaps) == set(STATEFUL["keras_tensorflow"]), gaps
    assert gaps["default"] > 0.1, gaps  # the finding: wrong gradients
    assert gaps["stateless"] < 1e-5, gaps


@pytest.mark.subprocess
@BLOCK_PROCESS
def test_keras_on_jax_replays_and_updates_once():
    gaps = held("jax")
    assert set(gaps) == set(STATEFUL["keras_jax"]), gaps
    assert gaps["default"] < 1e-5, gaps


def test_the_declarations_are_consistent():
    for port, variants in STATEFUL.items():
        for variant, declaration in variants.items():
            assert declaration_problems(declaration) == [], (port, variant)
