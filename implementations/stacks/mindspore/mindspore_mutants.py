"""Mutants of the MindSpore port: `Cell.recompute()` left out."""

from __future__ import annotations

from implementations.stacks.mindspore.mindspore import MLP, MindSpore


class _NoRecomputeMLP(MLP):
    """`Cell.recompute()` made a no-op: the cell is never marked for recomputation."""

    def recompute(self, **kwargs):
        return None


class MindSporeNoRecompute(MindSpore):
    """`Cell.recompute()` dropped: the same cell and values, the activations kept."""

    mlp = _NoRecomputeMLP
