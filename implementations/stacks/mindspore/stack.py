"""The MindSpore `Stack`: tensors, the precision report, the numpy init, MindSpore's instrument.

Imports mindspore (and numpy). Loading it sets PyNative mode and *warms* the
stack: MindSpore 2.10.0 under numpy 2 fails the first `value_and_grad` of a
function that closes over a Tensor once (`evidence.run_first_call`), so the
stack runs one such call now, and keeps what it said in `FIRST_CALL`
(pinned in tests/mindspore), so that no call of a port's is that first one.
"""

from __future__ import annotations

import mindspore as ms

from ..base import Stack
from ..numpy import canonical_params
from . import arrays, evidence

ms.set_context(mode=ms.PYNATIVE_MODE)

#: What the warming call raised (its text), or None if it ran: MindSpore's first-call glitch.
FIRST_CALL: str | None = evidence.run_first_call()

#: MindSpore: tensors to and from numpy, Flax's init in numpy, saved-tensor hooks and cell
#: hooks (`evidence.record(model, x, weights)`).
STACK = Stack(
    "mindspore",
    arrays=arrays,
    precision=arrays,
    init=canonical_params,
    instrument=evidence.record,
    distributions=("mindspore",),
)
