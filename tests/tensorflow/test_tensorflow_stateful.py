"""TensorFlow's block with variables and RNGs: `tf.recompute_grad` over `tf.nn.dropout` draws a
fresh mask and updates the statistics twice, as declared; `stateless_dropout` with the statistics
assigned outside the region is the fix beside it."""

from __future__ import annotations

from implementations.stacks.tensorflow.expectations import STATEFUL
from implementations.stacks.tensorflow.tensorflow import TensorFlow
from tests.support.stateful_steps import StatefulPortChecks


class TestTensorFlowStateful(StatefulPortChecks):
    port = TensorFlow
    table = STATEFUL["tensorflow"]
    wrong = ("default",)
    right = ("stateless",)
    counts = {"default": (1, 2, False), "stateless": (1, 1, True)}  # noqa: RUF012 - read only
