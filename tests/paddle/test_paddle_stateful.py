"""Paddle's block with variables and RNGs: `recompute` replays the mask but updates the
statistics twice; with `preserve_rng_state=False` it draws a fresh mask too, as declared; the
statistics updated outside the region are the fix beside them."""

from __future__ import annotations

from implementations.stacks.paddle.expectations import STATEFUL
from implementations.stacks.paddle.paddle import Paddle
from tests.support.stateful_steps import StatefulPortChecks


class TestPaddleStateful(StatefulPortChecks):
    port = Paddle
    table = STATEFUL["paddle"]
    wrong = ("no_preserve",)
    right = ("default", "stats_outside")
    counts = {"default": (1, 2, True), "no_preserve": (1, 2, False), "stats_outside": (1, 1, True)}  # noqa: RUF012 - read only
