"""MindSpore's block with variables and RNGs: `Cell.recompute()` replays the mask but assigns
the statistics twice; `mindspore.recompute` draws a fresh mask too, as declared; the statistics
applied once after the step are the fix beside them."""

from __future__ import annotations

from implementations.stacks.mindspore.expectations import STATEFUL
from implementations.stacks.mindspore.mindspore import MindSpore
from tests.support.stateful_steps import StatefulPortChecks


class TestMindSporeStateful(StatefulPortChecks):
    port = MindSpore
    table = STATEFUL["mindspore"]
    wrong = ("function",)
    right = ("default", "stats_outside")
    counts = {"default": (1, 2, True), "function": (1, 2, False), "stats_outside": (1, 1, True)}  # noqa: RUF012 - read only
