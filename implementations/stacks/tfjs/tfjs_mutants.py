"""Mutants of the tfjs process port: the same program, started with a mutation flag."""

from __future__ import annotations

from implementations.process import ProcessPort, expand_command

from .manifest import COMMAND


class TfjsNoCustomGrad(ProcessPort):
    """`port.js --mutant=no_custom_grad`: the plain MLP, no `tf.customGrad`; the same values."""

    def __init__(self):
        super().__init__("tfjs", [*expand_command(COMMAND), "--mutant=no_custom_grad"])
