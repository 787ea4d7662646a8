"""Mutants of the tfjs process port: the same program, started with a mutation flag."""

from __future__ import annotations

import implementations
from implementations.process import ProcessPort, expand_command


class TfjsNoCustomGrad(ProcessPort):
    """`port.js --mutant=no_custom_grad`: the plain MLP, no `tf.customGrad`; the same values."""

    def __init__(self):
        command = implementations.BUILTIN["tfjs"].removeprefix(implementations.EXEC_PREFIX)
        super().__init__("tfjs", [*expand_command(command), "--mutant=no_custom_grad"])
