"""Mutants of the MLX port: the checkpoint left out."""

from __future__ import annotations

from implementations.stacks.mlx.mlx import MLP, Mlx


class _PlainMLP(MLP):
    """The block without `nn.utils.checkpoint`, whatever `checkpoint` says."""

    def __call__(self, x):
        return self.block(x)


class MlxNoCheckpoint(Mlx):
    """`nn.utils.checkpoint` dropped: the same MLP and values, the activations kept."""

    mlp = _PlainMLP
