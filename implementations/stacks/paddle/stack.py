"""The Paddle `Stack`: tensors, the precision report, the numpy init, Paddle's instrument.

Imports paddle (and numpy).
"""

from __future__ import annotations

from ..numpy import on_numpy_init
from . import arrays, instrument

#: Paddle: tensors to and from numpy, Flax's init in numpy (Paddle's generator is not
#: threefry), its instrument on a port's own call (`instrument.observe(call, x, parameters)`).
STACK = on_numpy_init("paddle", arrays, instrument.observe, ("paddlepaddle",))
