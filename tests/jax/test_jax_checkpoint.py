"""The plain JAX port's own tests. The shared JAX-port tests are in `test_jax_ports.py`."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")
jc = pytest.importorskip("implementations.stacks.jax.jax_checkpoint")


def test_the_block_is_wrapped_by_jax_checkpoint():
    # jax.checkpoint's wrapper keeps the function it wraps.
    assert jc.checkpointed_block.__wrapped__ is jc.block


def test_the_parameters_are_the_canonical_dict():
    tree = jc.JaxCheckpoint().to_native("w1", "b1", "w2", "b2")
    assert tree == {"w1": "w1", "b1": "b1", "w2": "w2", "b2": "b2"}
