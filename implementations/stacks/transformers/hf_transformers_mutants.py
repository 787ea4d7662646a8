"""Mutants of the transformers port: the switches people get wrong."""

from __future__ import annotations

import numpy as np
import torch

from implementations.stacks.torch import as_input

from .hf_transformers import HfTransformers


class LeftInEvalMode(HfTransformers):
    """The switch on, the model left in `eval()`: transformers checkpoints a layer only while
    it trains, so every activation is kept."""

    def switch(self, model, kwargs):
        super().switch(model, kwargs)
        model.eval()


class SwitchNeverFlipped(HfTransformers):
    """`activation_checkpointing_enable` never called: the plain model."""

    def switch(self, model, kwargs):
        pass


class ReentrantInputWithoutGrad(HfTransformers):
    """`use_reentrant=True`, the layer's input a tensor that needs no grad (as hidden states
    from a frozen embedding): the reentrant checkpoint differentiates its inputs only, so
    nothing flows back to x, nor (its output needs no grad) to the layer's parameters."""

    use_reentrant = True

    def input_of(self, x: np.ndarray) -> torch.Tensor:
        return as_input(np.array(x, np.float32))
