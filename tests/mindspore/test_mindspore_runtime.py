"""The MindSpore stack's runtime settings: synchronous launches, a quiet warm-up, no deprecated
dtype interface. Expected values are written out here, never computed by the stack."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import mindspore as ms
import numpy as np
import pytest

from implementations.stacks.mindspore import numpy_dtype, stack
from implementations.stacks.mindspore.quiet import captured_stderr
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

#: What the stack's import and a port's calls must not print (the lines they printed before).
NOISE = ("compiled using NumPy 1.x", "Numpy init failed", "is deprecated", "Traceback")


def test_the_warm_up_keeps_its_expected_failure_off_the_terminal():
    # A fresh process: importing the stack and running the port's calls print nothing on
    # stderr, and the warm-up's output is kept, glog's native line included.
    code = textwrap.dedent(
        """
        import numpy as np
        from implementations import load
        from implementations.stacks.mindspore import stack
        port = load("mindspore")
        params = port.init_params(1, 3, 2)
        port.vjp(params, np.ones(3, np.float32), np.ones(2, np.float32))
        port.backward_record(params, np.ones(3, np.float32))
        port.nn_checkpoint_forward(1, port.from_numpy(np.ones(3, np.float32)), 2)
        print(stack.FIRST_CALL)
        print(repr(stack.FIRST_CALL_STDERR))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not [word for word in NOISE if word in done.stderr], done.stderr[-2000:]
    first_call, kept = done.stdout.strip().splitlines()[-2:]
    assert first_call.startswith("SystemError"), first_call
    assert "compiled using NumPy 1.x" in kept, kept
    assert "Numpy init failed" in kept, kept


def test_launches_are_synchronous():
    # Set by the stack when it loads (the port's cost per call depends on it).
    from mindspore._c_expression import RuntimeConf  # what ms.runtime.launch_blocking sets

    assert RuntimeConf.get_instance().is_launch_blocking() is True


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (ms.float32, np.float32),
        (ms.float64, np.float64),
        (ms.float16, np.float16),
        (ms.int32, np.int32),
        (ms.uint8, np.uint8),
        (ms.bool_, np.bool_),
        (ms.complex64, np.complex64),
        (ms.bfloat16, object),  # numpy has no bfloat16: the contract names it
    ],
)
def test_numpy_dtype_names_mindspores_dtypes(dtype, expected):
    assert numpy_dtype(dtype) == np.dtype(expected)


def test_the_port_no_longer_calls_the_deprecated_dtype_interface(monkeypatch):
    def deprecated(_):
        raise AssertionError("mindspore.dtype_to_nptype called")

    monkeypatch.setattr(ms, "dtype_to_nptype", deprecated)
    from implementations.stacks.mindspore import mindspore as port_module

    x = ms.Tensor(np.array([1.0, 2.0], np.float64))
    assert port_module.MindSpore().nn_checkpoint_forward(1, x, 3).shape == (3,)


def test_captured_stderr_takes_both_sides_and_restores_them_after_an_error():
    before_fd, before_stream = os.fstat(2), sys.stderr
    kept: list[str] = []

    def noisy_failure() -> None:
        with captured_stderr(kept):
            print("from python", file=sys.stderr)
            os.write(2, b"from the descriptor\n")
            raise ValueError("the block failed")

    with pytest.raises(ValueError, match="the block failed"):
        noisy_failure()
    assert kept == ["from python\nfrom the descriptor\n"]
    assert sys.stderr is before_stream
    after_fd = os.fstat(2)
    assert (after_fd.st_dev, after_fd.st_ino) == (before_fd.st_dev, before_fd.st_ino)


def test_the_stack_kept_the_warm_up_output():
    assert stack.FIRST_CALL is not None
    assert "Numpy init failed" in stack.FIRST_CALL_STDERR
