"""A port's warm times in `compare`: the calls timed, and what each time means.

The forward is the exercise, `nn_checkpoint_forward` on the framework's own x with a new seed
per call (its init included, as the exercise's), read back to numpy to synchronise. The VJP is
the framework's call alone where the port offers one (`prepared_vjp`: its model and arrays
made once, before timing), else the contract's `vjp` whole, the port's per-call setup
included; `VJP_METHODS` names the two, and each row says which it got (`warm_vjp_method`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from implementations.contract import Implementation, Params

from ..running.timing import time_interleaved
from .model import PortComparison, Timing

#: `warm_vjp_method` -> what was timed.
VJP_METHODS = {
    "prepared_vjp": "the framework's forward and backward call alone (the port's "
    "prepared_vjp): its model, arrays and cotangent made once, before timing",
    "vjp": "the contract's vjp whole, numpy in and out: the port's per-call setup (building "
    "its model, converting arrays) included, as it offers no prepared_vjp",
}


def _owner(cls: type, name: str) -> type | None:
    return next((k for k in cls.__mro__ if name in vars(k)), None)


def prepared_is_the_ports(port: Implementation) -> bool:
    """Whether `port.prepared_vjp` runs what its `vjp` runs: defined in the port's class or
    below every class that defines `vjp` or a method `vjp` builds on (`vjp_builds_on`), so
    that a subclass that changes its `vjp` alone is never timed on its base's call."""
    cls = type(port)
    prepared = _owner(cls, "prepared_vjp")
    if prepared is None or prepared is Implementation:
        return False
    mro = cls.__mro__
    for name in ("vjp", *getattr(cls, "vjp_builds_on", ())):
        owner = _owner(cls, name)
        if owner is not None and mro.index(owner) < mro.index(prepared):
            return False
    return True


def timed_vjp(
    port: Implementation, params: Params, x: np.ndarray, cotangent: np.ndarray
) -> tuple[Callable[[], Any], str]:
    """The VJP call to time for `port` and its method (a key of `VJP_METHODS`)."""
    if prepared_is_the_ports(port):
        call = port.prepared_vjp(params, x, cotangent, checkpoint=True)
        if call is not None:
            return call, "prepared_vjp"
    return (lambda: port.vjp(params, x, cotangent, checkpoint=True)), "vjp"


def warm_timings(
    ports: Sequence[Implementation],
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    repeats: int,
) -> list[tuple[Timing | None, Timing | None, str]]:
    """Warm seconds per call of each port's forward and VJP, all interleaved, and the VJP's
    method (`VJP_METHODS`)."""
    calls, methods = [], []
    try:
        for port in ports:
            native = port.from_numpy(x)
            # A new seed on every call: a port must not get faster by caching one init.
            seeds = itertools.count(seed)
            calls.append(
                lambda port=port, native=native, seeds=seeds: port.to_numpy(
                    port.nn_checkpoint_forward(next(seeds), native, params.features)
                )
            )
            vjp, method = timed_vjp(port, params, x, cotangent)
            calls.append(vjp)
            methods.append(method)
        timings = [Timing.of(s) for s in time_interleaved(calls, repeats)]
    except Exception:
        return [(None, None, "")] * len(ports)
    return [(timings[2 * i], timings[2 * i + 1], methods[i]) for i in range(len(ports))]


#: What a lane that timed nothing gives `set_warm` for a port.
NOT_TIMED = (None, None, "")


def set_warm(
    row: PortComparison,
    forward: Timing | None,
    vjp: Timing | None,
    vjp_method: str = "",
    *,
    lane: str = "",
) -> None:
    """Write a port's warm timings into its row, what its VJP time timed, and the lane
    (process) that measured it."""
    row.lane = lane
    if forward is None or vjp is None:
        return
    row.warm_forward_seconds, row.warm_vjp_seconds = forward.median, vjp.median
    row.warm_vjp_method = vjp_method
    row.warm_spread = {"forward": forward.half_iqr, "vjp": vjp.half_iqr}
    row.warm_samples = min(forward.n, vjp.n)
