"""MLX's block with variables and RNGs: `nn.utils.checkpoint` over `nn.Dropout` draws a fresh
mask from the global key and updates the statistics twice, as declared; an explicit key with
the statistics updated outside the region is the fix beside it."""

from __future__ import annotations

from implementations.stacks.mlx.expectations import STATEFUL
from implementations.stacks.mlx.mlx import Mlx
from tests.support.stateful_steps import StatefulPortChecks


class TestMlxStateful(StatefulPortChecks):
    port = Mlx
    table = STATEFUL["mlx"]
    wrong = ("default",)
    right = ("explicit_key",)
    counts = {"default": (1, 2, False), "explicit_key": (1, 1, True)}  # noqa: RUF012 - read only
