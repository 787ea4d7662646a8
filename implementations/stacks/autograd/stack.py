"""The autograd `Stack`. Imports autograd (and numpy).

autograd: numpy arrays in and out (a traced x is a box), no precision switch
(numpy's float32 BLAS), Flax's init in numpy (autograd has none of its own),
and what `make_vjp` keeps and its backward pass runs
(`record(fn, args, origins, cotangent, tap)`, `evidence.backward_record`).
"""

from __future__ import annotations

from ..base import Stack
from ..numpy import canonical_params
from . import arrays, evidence

STACK = Stack(
    "autograd",
    arrays=arrays,
    precision=arrays,
    init=canonical_params,
    instrument=evidence.backward_record,
    distributions=("autograd", "numpy"),
)
