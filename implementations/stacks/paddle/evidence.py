"""Paddle's pieces for the hook instruments (`implementations.stacks.hooks_evidence`): how a
tensor is described, and `classify` for the bench's saved-tensor hooks. Imports paddle only.

The evidence of a port (`observed`) hooks the port's own call. Two of Paddle's traits shape
it: `recompute(use_reentrant=False)` installs saved-tensor hooks of its own, and Paddle allows
one pair at a time ("only one pair of hooks is allowed at a time"), so the instrument needs
the reentrant default; and Paddle's `linear` adds the bias in the one op, so d1 never stands
alone (the first `Linear`'s output is h).
"""

from __future__ import annotations

import functools

from .. import hooks_evidence
from ..hooks_evidence import SavedTensors
from .loaded import paddle


def describe(tensor: paddle.Tensor) -> tuple[str, str, str]:
    """Its dtype without the `paddle.` prefix; x and an activation noted by the tensor's name."""
    return str(tensor.dtype).removeprefix("paddle."), f"x ({tensor.name})", f"tensor {tensor.name}"


#: `classify(by_storage, x, parameters, role)`: the saved tensors as records, in Paddle's words.
classify = functools.partial(hooks_evidence.classify, describe=describe)


__all__ = ["SavedTensors", "classify", "describe"]
