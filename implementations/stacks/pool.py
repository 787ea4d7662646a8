"""`ModelPool`: built models lent to one call at a time, given each call's parameters. Imports
the standard library only (a stack subclasses it with its framework's `assign`).

Building a model (its layers, their parameters, the checkpoint's wiring)
can cost more CPU than the VJP it serves on the exercise's shapes. A pool
keeps idle models by (class, D, F, checkpoint): `lend(...)` takes one out
(or builds one), gives it the call's parameters (`assign`, copies), and puts
it back when the call is done, so two calls never share one, and a call
that raised does not put its model back (a hook or a half-done backward
pass may remain on it). Only for calls that are done with the model when
they return: an output that the caller may differentiate later reads its
model's parameters then, so the exercise's function builds its own.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from ..contract import Params


class ModelPool:
    """Idle models by (class, D, F, checkpoint); at most `size` keys (least recently used out).

    Subclasses define `assign(model, params)`: the call's parameters into a
    pooled model, as copies, with whatever the last call left (gradients)
    cleared.
    """

    def __init__(self, size: int = 8):
        self.size = size
        self._idle: collections.OrderedDict[tuple, list[Any]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def assign(self, model: Any, params: Params) -> None:
        raise NotImplementedError

    def release(self, model: Any) -> None:
        """What to drop from a model going back to the pool (nothing by default)."""

    @contextlib.contextmanager
    def lend(self, build: type, params: Params, *, checkpoint: bool) -> Iterator[Any]:
        """A model `build(params, checkpoint=checkpoint)` holding copies of `params`, this
        call's alone until the `with` block ends."""
        key = (build, params.dim, params.features, bool(checkpoint))
        with self._lock:
            idle = self._idle.get(key)
            model = idle.pop() if idle else None
        if model is None:
            model = build(params, checkpoint=checkpoint)
        else:
            self.assign(model, params)
        yield model  # not put back if the call raised: a later call builds anew
        self.release(model)
        with self._lock:
            self._idle.setdefault(key, []).append(model)
            self._idle.move_to_end(key)
            while len(self._idle) > self.size:
                self._idle.popitem(last=False)
