"""DeepSpeed's `partition_activations` and `checkpoint_in_cpu`, run on the port's checkpoint and
pinned as they behave upstream (deepspeed 0.19.8, torch 2.13, CPU, one gloo rank).

`configure()` needs a process group, so the options run in a process of their own
(`tests/support/deepspeed_options_probe.py`, one run for every case: about 5 s of CPU; it does not
build DeepSpeed's shared-memory all-reduce op, which one rank never uses and whose first
build in a venv takes about 100 s). Where an option works, its values and gradients are
bitwise the default checkpoint's; where it fails, the test holds the exact error, so it fails
the day DeepSpeed changes it. The port's declaration (`DeepSpeed.options`) must say the same.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from implementations.stacks.deepspeed.deepspeed import DeepSpeed
from tests.support.deepspeed_options_probe import SHAPES, D
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

PARTITION = {"partition_activations": True}
IN_CPU = {"checkpoint_in_cpu": True}
BOTH = PARTITION | IN_CPU
#: The errors, as DeepSpeed 0.19.8 raises them on this model (D = 4).
PARTITION_2D = (
    "RuntimeError: The size of tensor a (8) must match the size of tensor b (4) "
    "at non-singleton dimension 1"
)
PARTITION_ONE_ROW = "RuntimeError: output with shape [4] doesn't match the broadcast shape [1, 4]"
IN_CPU_ERROR = (
    "RuntimeError: both arguments to linear need to be at least 1D, but they are 0D and 2D"
)


@pytest.fixture(scope="module")
def probe() -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.deepspeed_options_probe"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def _case(probe: dict, options: dict, shape: tuple[int, ...]) -> dict:
    (found,) = [c for c in probe["cases"] if c["options"] == options and tuple(c["shape"]) == shape]
    return found


def test_the_probe_ran_every_option_on_every_shape(probe):
    ran = {(json.dumps(c["options"], sort_keys=True), tuple(c["shape"])) for c in probe["cases"]}
    expected = {
        (json.dumps(o, sort_keys=True), s) for o in (PARTITION, IN_CPU, BOTH) for s in SHAPES
    }
    assert ran == expected
    assert SHAPES == ((D,), (1, D), (2, D))


@pytest.mark.parametrize("options", [PARTITION, BOTH], ids=["partition", "partition+cpu"])
def test_partition_activations_works_on_a_1d_x_bit_for_bit(probe, options):
    found = _case(probe, options, (D,))
    assert "error" not in found, found
    assert found["equal"] is True  # output, x's gradient and every parameter's


@pytest.mark.parametrize("options", [PARTITION, BOTH], ids=["partition", "partition+cpu"])
def test_partition_activations_fails_on_a_2d_x(probe, options):
    # Pinned upstream behaviour: it keeps x flattened and puts that back as x's data.
    assert _case(probe, options, (2, D))["error"] == PARTITION_2D
    assert _case(probe, options, (1, D))["error"] == PARTITION_ONE_ROW


@pytest.mark.parametrize("shape", SHAPES)
def test_checkpoint_in_cpu_fails_on_every_x(probe, shape):
    # Pinned upstream behaviour: on the CPU its "copy to the CPU" is x itself, emptied.
    assert _case(probe, IN_CPU, shape)["error"] == IN_CPU_ERROR


@pytest.mark.parametrize("options", [PARTITION, IN_CPU, BOTH], ids=["partition", "cpu", "both"])
def test_either_option_empties_the_callers_x_between_the_passes(probe, options):
    # The caller's x holds a 0-D placeholder until the backward pass puts its data back.
    for shape in SHAPES:
        assert _case(probe, options, shape)["x_between"] == [], shape
    # The defaults leave it alone.
    assert probe["defaults_x_between"] == {str(list(s)): list(s) for s in SHAPES}


def test_the_port_declares_each_option_as_it_behaves():
    options = DeepSpeed.options
    assert set(options) == {"partition_activations", "checkpoint_in_cpu"}
    assert "works on a 1-D x" in options["partition_activations"]
    assert "fails on a 2-D x" in options["partition_activations"]
    # The declaration quotes the errors pinned above (B*D and D for 8 and 4).
    assert (
        "must match the size of tensor b (D) at non-singleton dimension 1"
        in (options["partition_activations"])
    )
    assert "doesn't match the broadcast shape [1, D]" in options["partition_activations"]
    assert IN_CPU_ERROR.removeprefix("RuntimeError: ") in options["checkpoint_in_cpu"]
    assert "fails on every x" in options["checkpoint_in_cpu"]
    assert "0-D placeholder" in DeepSpeed.option_side_effect
    # Neither is a policy: the port's declarations of what it cannot express say why.
    assert "checkpoint_in_cpu" in DeepSpeed.inexpressible["offload_dots"]
    assert "partition_activations" in DeepSpeed.inexpressible["budget"]
