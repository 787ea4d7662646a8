"""The Paddle `Stack`: tensors, the precision report, the numpy init, Paddle's instrument.

Imports paddle (and numpy).
"""

from __future__ import annotations

from ..base import Stack
from ..numpy import canonical_params
from . import arrays, instrument

#: Paddle: tensors to and from numpy, Flax's init in numpy (Paddle's generator is not
#: threefry), its instrument on a port's own call (`instrument.observe(call, x, parameters)`).
STACK = Stack(
    "paddle",
    arrays=arrays,
    precision=arrays,
    init=canonical_params,
    instrument=instrument.observe,
    distributions=("paddlepaddle",),
)
