"""Mutants of the TensorFlow port. Imports TensorFlow (through the port)."""

from __future__ import annotations

from implementations.stacks.tensorflow import tensorflow as port


class NoRecomputeGrad(port.TensorFlow):
    """`tf.recompute_grad` left out: the plain block where the checkpoint should be."""

    region = staticmethod(port.block)
