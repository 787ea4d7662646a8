"""The autograd `Stack`. Imports autograd (and numpy).

autograd: numpy arrays in and out (a traced x is a box), no precision switch
(numpy's float32 BLAS), Flax's init in numpy (autograd has none of its own),
and what a call's `make_vjp` keeps and its backward pass runs
(`record(call, x, parameters)`, `instrument.observe`, a `Record`).
"""

from __future__ import annotations

from ..numpy import on_numpy_init
from . import arrays, instrument

STACK = on_numpy_init(
    "autograd",
    arrays,
    lambda *args: instrument.observe(*args).backward_record(),
    ("autograd", "numpy"),
)
