"""Mutants of the autograd port: the checkpoint left out, and `autograd.checkpoint` as shipped."""

from __future__ import annotations

from typing import ClassVar

import autograd

from implementations.stacks.autograd.hips_autograd import HipsAutograd
from implementations.stacks.autograd.mlp import block

#: `autograd.checkpoint` (1.9.1) around the same block, made once (its primitive is global).
upstream_checkpointed_block = autograd.checkpoint(block)


class AutogradNoCheckpoint(HipsAutograd):
    """The checkpoint dropped: the full policy runs the plain block (same values, activations
    kept)."""

    checkpointed: ClassVar = staticmethod(block)


class AutogradUpstreamCheckpoint(HipsAutograd):
    """`autograd.checkpoint` as shipped: its VJP maker traces the block in the forward pass
    (once per differentiated input) and keeps those traces' activations; the backward pass
    recomputes nothing."""

    checkpointed: ClassVar = staticmethod(upstream_checkpointed_block)
