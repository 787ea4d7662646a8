"""The autograd base reads its evidence off the port's own call (`instrument`), never off a second
model: a port whose own `forward`, `vjp` and `nn_checkpoint_forward` never checkpoint has the
right values and fails (e), while the base's block still checkpoints."""

from __future__ import annotations

import sys

import pytest

from conformance.mutants import load
from implementations.stacks.autograd.hips_autograd import HipsAutograd
from implementations.stacks.autograd.hips_autograd_mutants import OwnModelWithoutCheckpoint
from tests.support.own_call_kit import PARAMS, OriginsFollowXKit, OwnCallKit, X


class TestOwnCall(OwnCallKit, OriginsFollowXKit):
    PORT, MUTANT = HipsAutograd, OwnModelWithoutCheckpoint
    MUTANT_NAME = "autograd_own_model_no_checkpoint"
    KILLED_WITH = r"saves 1 activation.*a: output of relu"


def test_an_array_made_outside_any_primitive_is_never_taken_for_harmless():
    """The upstream checkpoint's forward traces compute h with plain numpy (no box): the relu
    of it is an activation still, and so is any saved array the call made off the record."""
    record = load("autograd_upstream_checkpoint").port.backward_record(PARAMS, X)
    assert len(record.saved_by_origin("activation")) == 4
    assert not record.saved_by_origin("constant")


def test_the_instrument_puts_back_the_profiler_it_found():
    from implementations.stacks.autograd import instrument

    def failing():
        raise RuntimeError("the port's own error")

    before = sys.getprofile()
    HipsAutograd().backward_record(PARAMS, X)
    with pytest.raises(RuntimeError, match="the port's own error"):
        instrument.observe(failing, X, ())
    assert sys.getprofile() is before
