"""`compare`'s lanes: one process per framework, measured side by side, timed one at a time."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from conformance.comparison import lanes
from conformance.running import isolation

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


def test_each_framework_gets_one_lane_and_each_keras_backend_its_own():
    names = [
        "flax_linen", "equinox_jax", "pytorch", "flax_nnx", "jax_checkpoint", "haiku", "mlx",
        "torch_compile", "tensorflow", "keras_jax", "keras_torch", "keras_tensorflow", "tfjs",
        "paddle", "mindspore", "deepspeed", "someone_elses_port",
    ]  # fmt: skip
    assert lanes.plan(names) == {
        "jax": ["flax_linen", "equinox_jax", "flax_nnx", "jax_checkpoint", "haiku"],
        "torch": ["pytorch", "torch_compile", "deepspeed"],
        "mlx": ["mlx"],
        "tensorflow": ["tensorflow"],
        "keras_jax": ["keras_jax"],
        "keras_torch": ["keras_torch"],
        "keras_tensorflow": ["keras_tensorflow"],
        "tfjs": ["tfjs"],  # a program: its own
        "paddle": ["paddle"],
        "mindspore": ["mindspore"],
        "someone_elses_port": ["someone_elses_port"],  # from an entry point: its own
    }


def crash(*args):
    """A lane process that dies by a signal before it answers."""
    os.kill(os.getpid(), signal.SIGSEGV)


def test_a_lane_whose_process_dies_says_how_and_the_comparison_goes_on(monkeypatch):
    def start(self):  # the lane's process runs `crash` instead of `lanes.serve`
        self._scratch = tempfile.mkdtemp()
        output = Path(self._scratch) / "output"
        self.child = isolation.Child(f"{__name__}:crash", (), output=output)

    monkeypatch.setattr(lanes.Lane, "start", start)
    lane = lanes.Lane("doomed", ["pytorch"], ())
    measured_here = []
    lanes.run_lanes([lane], 1, lambda: measured_here.append(True))
    try:
        assert measured_here == [True]
        assert lane.measured
        assert "killed by SIGSEGV" in lane.failure
        assert lane.rows == {}
        assert lane.time() == {}  # nothing to time, and no hang
    finally:
        lane.end()
