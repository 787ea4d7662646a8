"""The MindSpore port (PyNative): its layout, `Cell.recompute()` behaviour, evidence, inputs
(the tests of `tests.support.stack_kit.ReferencePortKit` and MindSpore's own), and MindSpore's
first-call glitch, pinned.

Expected values come from a float64 numpy MLP (`tests.support.reference`) under the
project's error bounds, or from the cell without `recompute()`.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from typing import ClassVar

import mindspore as ms
import numpy as np
import pytest

from conformance.checking.tolerance import vjp_bounds
from implementations.stacks.mindspore import FIRST_CALL, MLP, STATE_NAMES, as_input, parameters
from implementations.stacks.mindspore import mindspore as port_module
from implementations.stacks.numpy import canonical_params
from tests.support import reference
from tests.support.helpers import ROOT
from tests.support.stack_kit import ReferencePortKit, normal_x

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

PORT = port_module.MindSpore()


class _CountingMLP(MLP):
    """Counts `construct`'s runs: an instrument independent of the stack's hooks."""

    runs = 0

    def construct(self, x):
        type(self).runs += 1
        return super().construct(x)


class TestMindSporePort(ReferencePortKit):
    PORT = PORT
    RECOMPUTED: ClassVar[dict] = {
        "Affine": 2,
        "ReLU": 1,
    }  # the whole cell again: both Affines and the ReLU

    def block_runs(self, params, x, checkpoint):
        _CountingMLP.runs = 0
        model = _CountingMLP(params, checkpoint=checkpoint)
        _, vjp_fn = ms.vjp(model, as_input(x), weights=parameters(model))
        vjp_fn(ms.ops.ones((5,), ms.float32))
        return _CountingMLP.runs

    def float64_and_integer_x(self, x):
        return ms.Tensor(x), ms.Tensor(x.astype(np.int32))


def test_the_layout_is_the_canonical_one():
    params = canonical_params(3, 5, 4)
    model = MLP(params)
    assert [name for name, _ in model.parameters_and_names()] == list(STATE_NAMES)
    np.testing.assert_array_equal(parameters(model)[0].asnumpy(), params.w1)  # (in, out)
    np.testing.assert_array_equal(parameters(model)[2].asnumpy(), params.w2)


def test_gradients_flow_to_a_mindspore_x_which_is_never_modified():
    x = ms.Tensor(normal_x(5, 4))
    before = x.asnumpy().copy()
    dx = ms.grad(lambda x: PORT.nn_checkpoint_forward(3, x, 5).sum())(x)
    np.testing.assert_array_equal(x.asnumpy(), before)
    params, ones = canonical_params(3, 4, 5), np.ones(5, np.float32)
    expected, bound = reference.vjp(params, before, ones)["x"], vjp_bounds(params, before, ones)
    assert np.all(np.abs(dx.asnumpy() - expected) <= bound["x"])


def test_the_stack_met_the_first_call_glitch_when_it_warmed_up():
    # The stack ran MindSpore's first value_and_grad when it loaded, so that no
    # call of the port's is that first one; it kept what happened.
    assert FIRST_CALL is not None
    assert FIRST_CALL.startswith("SystemError"), FIRST_CALL


def test_the_first_value_and_grad_fails_once_upstream():
    # Upstream (MindSpore 2.10.0, numpy 2.4.6): the first PyNative value_and_grad
    # of a function closing over a Tensor raises SystemError once, later ones
    # work. Pinned in a fresh process: this fails the day it is fixed, and the
    # stack's warm-up (implementations/stacks/mindspore/stack.py) can go.
    code = textwrap.dedent(
        """
        import mindspore as ms
        ms.set_context(mode=ms.PYNATIVE_MODE)
        weight = ms.Tensor([2.0], ms.float32)
        said = []
        for _ in range(3):
            try:
                ms.value_and_grad(lambda v: (v * weight).sum())(ms.Tensor([1.0], ms.float32))
                said.append("ok")
            except SystemError:
                said.append("SystemError")
        print(said)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "['SystemError', 'ok', 'ok']"


def test_the_ports_first_call_in_a_fresh_process_works():
    # The glitch handled: the port's very first call (a VJP) runs, thanks to the warm-up.
    code = textwrap.dedent(
        """
        import numpy as np
        from implementations import load
        port = load("mindspore")
        params = port.init_params(1, 3, 2)
        grads = port.vjp(params, np.ones(3, np.float32), np.ones(2, np.float32))
        print("ok", grads.x.shape)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "ok (3,)"


@pytest.mark.skipif(
    importlib.util.find_spec("paddle") is None, reason="PaddlePaddle is not installed"
)
def test_mindspore_after_paddle_fails_and_the_port_says_so():
    # Upstream (MindSpore 2.10.0, Paddle 3.3.1, both with oneDNN): MindSpore's
    # CPU ops cannot load after Paddle in one process. Pinned; and the port,
    # loaded after Paddle, is reported as loading in a process of its own.
    code = textwrap.dedent(
        """
        import paddle
        from implementations import PortUnavailable, load
        try:
            load("mindspore")
        except PortUnavailable as error:
            print("held" if error.held else "not held", error)
        import mindspore as ms
        try:
            ms.ops.matmul(ms.Tensor([[1.0]]), ms.Tensor([[2.0]])).asnumpy()
            print("ran")
        except Exception as error:
            print(type(error).__name__, error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("held"), done.stdout + done.stderr[-2000:]
    assert "dnnl_threadpool_interop_stream_create" in done.stdout + done.stderr, done.stdout
