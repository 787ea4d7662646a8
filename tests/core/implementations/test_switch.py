"""`checkpoint_on`: the contract's `checkpoint=` for ports that express only none and full."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from implementations.stacks.switch import checkpoint_on


@dataclass(frozen=True)
class _Policy:  # the shape of implementations.policies.Policy (issue 21): truthy, with a name
    name: str


def test_booleans_and_policies_switch_the_checkpoint():
    assert checkpoint_on(True) is True
    assert checkpoint_on(False) is False
    assert checkpoint_on(_Policy("full")) is True
    assert checkpoint_on(_Policy("none")) is False  # truthy object, still off


def test_another_policy_is_refused_naming_checkpoint():
    with pytest.raises(ValueError, match="checkpoint=save_dots"):
        checkpoint_on(_Policy("save_dots"))
