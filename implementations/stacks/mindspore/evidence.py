"""MindSpore's pieces for the hook instruments (`implementations.stacks.hooks_evidence`): how a
tensor is described, `classify` for the bench's saved-tensor hooks, and the first-call warm-up
(`run_first_call`). Imports mindspore only.

The evidence of a port (`observed`) hooks the port's own call. The `Affine` cell adds the bias
inside the cell, so d1 is never seen alone (the first `Affine`'s output is h).
"""

from __future__ import annotations

import functools

from .. import hooks_evidence
from ..hooks_evidence import SavedTensors
from .loaded import ms


def describe(tensor: ms.Tensor) -> tuple[str, str, str]:
    """Its dtype in lower case (`float32`); x is x, an activation computed from x."""
    return str(tensor.dtype).lower(), "x", "computed from x"


#: `classify(by_storage, x, parameters, role)`: the saved tensors as records, in MindSpore's words.
classify = functools.partial(hooks_evidence.classify, describe=describe)


def run_first_call() -> str | None:
    """The first PyNative `value_and_grad` of a function that closes over a Tensor, once.

    MindSpore 2.10.0 under numpy 2 fails it once with `SystemError`
    ("py_parse.cc:132 Numpy init failed"), and every later call works.
    Returns the error's text when it failed, None when it ran.
    """
    weight = ms.Tensor([2.0], ms.float32)
    try:
        ms.value_and_grad(lambda v: (v * weight).sum())(ms.Tensor([1.0], ms.float32))
    except SystemError as error:
        return f"{type(error).__name__}: {error}"
    return None


__all__ = ["SavedTensors", "classify", "describe", "run_first_call"]
