"""The PaddlePaddle port: its layout, `recompute` behaviour, evidence, inputs (the tests of
`tests.support.stack_kit.ReferencePortKit` and Paddle's own), and Paddle's pitfalls pinned (the
TensorFlow-first segfault, the non-reentrant recompute's hooks).

Expected values come from a float64 numpy MLP (`tests.support.reference`) under the
project's error bounds, or from the checkpoint-free Paddle module.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from typing import ClassVar

import numpy as np
import paddle
import pytest

from conformance.checking.tolerance import vjp_bounds
from implementations.stacks.numpy import canonical_params
from implementations.stacks.paddle import MLP, STATE_NAMES, leaf_input
from implementations.stacks.paddle import paddle as port_module
from tests.support import reference
from tests.support.helpers import ROOT
from tests.support.stack_kit import ReferencePortKit, normal_x

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

PORT = port_module.Paddle()


class _CountingMLP(MLP):
    """Counts the block's runs: an instrument independent of the stack's hooks."""

    runs = 0

    def block(self, x):
        type(self).runs += 1
        return super().block(x)


class TestPaddlePort(ReferencePortKit):
    PORT = PORT
    RECOMPUTED: ClassVar[dict] = {
        "Linear": 2,
        "ReLU": 1,
    }  # the whole block again: both Linears and the ReLU

    def block_runs(self, params, x, checkpoint):
        _CountingMLP.runs = 0
        model, leaf = _CountingMLP(params, checkpoint=checkpoint), leaf_input(x)
        model(leaf).backward(paddle.ones([5]))
        return _CountingMLP.runs

    def float64_and_integer_x(self, x):
        return paddle.to_tensor(x), paddle.to_tensor(x.astype(np.int64))


def test_the_layout_is_the_canonical_one():
    params = canonical_params(3, 5, 4)
    named = dict(MLP(params).named_parameters())
    assert list(named) == list(STATE_NAMES)
    np.testing.assert_array_equal(named["fc1.weight"].numpy(), params.w1)  # (in, out)
    np.testing.assert_array_equal(named["fc2.weight"].numpy(), params.w2)


def test_the_model_holds_copies_of_the_callers_arrays():
    params = canonical_params(3, 5, 4)
    kept = {name: getattr(params, name).copy() for name in ("w1", "b1", "w2", "b2")}
    named = dict(MLP(params).named_parameters())
    with paddle.no_grad():
        for parameter in named.values():
            parameter.set_value(parameter + 1.0)
    for name, value in kept.items():  # the caller's arrays did not follow the model's
        np.testing.assert_array_equal(getattr(params, name), value)
    np.testing.assert_array_equal(named["fc1.weight"].numpy(), kept["w1"] + 1.0)
    assert named["fc1.weight"].dtype == paddle.float32


def test_building_the_model_leaves_paddles_random_stream_alone():
    paddle.seed(7)
    expected = paddle.rand([3]).numpy()
    paddle.seed(7)
    MLP(canonical_params(1, 6, 5))
    np.testing.assert_array_equal(paddle.rand([3]).numpy(), expected)


def test_gradients_flow_to_a_paddle_x_which_is_never_modified():
    x = paddle.to_tensor(normal_x(5, 4), stop_gradient=False)
    before = x.numpy().copy()
    out = PORT.nn_checkpoint_forward(3, x, 5)
    out.backward(paddle.ones([5]))
    np.testing.assert_array_equal(x.numpy(), before)
    params = canonical_params(3, 4, 5)
    expected = reference.vjp(params, before, np.ones(5, np.float32))["x"]
    bound = vjp_bounds(params, before, np.ones(5, np.float32))["x"]
    assert np.all(np.abs(x.grad.numpy() - expected) <= bound)


def test_non_reentrant_recompute_takes_the_one_pair_of_hooks_paddle_allows():
    # Why the port uses the reentrant default: with use_reentrant=False the
    # evidence's saved-tensor hooks cannot be installed (Paddle 3.3.1).
    from paddle.distributed.fleet.utils import recompute

    model, x = MLP(canonical_params(1, 3, 2)), leaf_input(normal_x(1, 3))
    with (
        pytest.raises(Exception, match="only one pair of hooks"),
        paddle.autograd.saved_tensors_hooks(lambda t: t, lambda t: t),
    ):
        recompute(model.block, x, use_reentrant=False)


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed"
)
def test_paddle_after_tensorflow_segfaults_in_one_process():
    # Upstream (TensorFlow 2.21, Paddle 3.3.1): pinned, so that the day it is fixed this
    # fails and the note in implementations/stacks/paddle/README.md can go. The suite never
    # meets it: every port runs in a worker process of its own.
    code = "import tensorflow, paddle"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert done.returncode == -11, (done.returncode, done.stderr[-2000:])


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed"
)
def test_a_run_of_tensorflow_then_paddle_survives_the_segfault(tmp_path):
    # The suite's answer to the segfault above: each port in its own worker, so
    # TensorFlow's and Paddle's ports both pass in one run, in that order.
    code = textwrap.dedent(
        """
        from conformance.running.suite import RunConfig, run_suite
        config = RunConfig(
            ports=("tensorflow", "paddle"), profile="dev", max_examples=2,
            properties=("a_init",), mutants=False, jobs=1,
        )
        report = run_suite(config)
        print([(o.port, o.property, o.status) for p in report.ports for o in p.outcomes])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "('tensorflow', 'a_init', 'pass')" in done.stdout, done.stdout
    assert "('paddle', 'a_init', 'pass')" in done.stdout, done.stdout
