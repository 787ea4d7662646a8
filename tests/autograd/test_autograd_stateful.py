"""autograd's block with variables and RNGs: a checkpoint that traces the block again (the
port's, in backward; autograd.checkpoint, in forward) draws a fresh mask from numpy's global
generator and updates the statistics twice, as declared; a mask from an explicit seed is the
fix beside them."""

from __future__ import annotations

from implementations.stacks.autograd.expectations import STATEFUL
from implementations.stacks.autograd.hips_autograd import HipsAutograd
from tests.support.stateful_steps import StatefulPortChecks


class TestAutogradStateful(StatefulPortChecks):
    port = HipsAutograd
    table = STATEFUL["hips_autograd"]
    wrong = ("default", "upstream")
    right = ("explicit_seed",)
    counts = {"default": (1, 2, False), "upstream": (1, 2, False), "explicit_seed": (1, 1, True)}  # noqa: RUF012 - read only
