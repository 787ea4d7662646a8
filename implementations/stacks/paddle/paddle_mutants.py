"""Mutants of the Paddle port: the recompute left out."""

from __future__ import annotations

from implementations.stacks.paddle.paddle import MLP, Paddle


class _PlainMLP(MLP):
    """The block without `recompute`, whatever `checkpoint` says."""

    def forward(self, x):
        return self.block(x)


class PaddleNoRecompute(Paddle):
    """`recompute` dropped: the same MLP and values, the activations kept."""

    mlp = _PlainMLP
