"""`saved_tensors_hooks(pack, unpack)`: Paddle's `paddle.autograd.saved_tensors_hooks`, less
the path that corrupts the heap. Imports paddle only.

Under the hooks, Paddle 3.3.1 packs a `PyLayer`'s `ctx.save_for_backward(*tensors)` in its
container setter (`call_pack_hook`, paddle/fluid/pybind/eager_py_layer.cc), which releases the
tuple it was given once more than it took: `if (PyTuple_Check(value)) Py_XDECREF(saved_value)`,
`saved_value` being `value` itself, borrowed. `save_for_backward`'s `*tensors` tuple is then
freed while its frame still holds it, and the frame's own release writes into freed memory.
A tuple of over 1 KiB (a region's input and 4 parameters a block: 129 tensors in
`nested(2,2,2,2,2,2)`'s largest region at L = 64, 213 in `binomial(2)`'s) is a glibc large-bin
chunk, where that write can land on the chunk's `fd_nextsize`: a later `malloc` faults in
`unlink_chunk`, and Paddle's `SignalHandle`, allocating in the handler, deadlocks on malloc's
lock (`bench --schedules` at L = 64 hung so). `tests/paddle/test_paddle_saved_hooks.py` holds
the count.

Here a `PyLayer`'s `save_for_backward` runs with the hooks off, after handing each tensor to
`pack` itself (its result dropped: the container keeps the tensors, as identity hooks would),
and the hooks go back on under `paddle.enable_grad()` (Paddle's `register_saved_tensors_hooks`
does nothing while grad is off, as it is in a `PyLayer`'s forward); every other saved tensor
goes through Paddle's hooks as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from .loaded import paddle


@contextlib.contextmanager
def saved_tensors_hooks(
    pack: Callable[[paddle.Tensor], Any], unpack: Callable[[Any], paddle.Tensor]
) -> Iterator[None]:
    """`paddle.autograd.saved_tensors_hooks(pack, unpack)` for the `with` block, a `PyLayer`'s
    saved tensors passed to `pack` outside Paddle's container setter (see the module)."""
    context = paddle.autograd.PyLayerContext
    original = context.save_for_backward
    eager = paddle.base.core.eager

    def save_unhooked(ctx: Any, *tensors: Any) -> None:
        for item in tensors:
            for tensor in item if isinstance(item, (tuple, list)) else (item,):
                if isinstance(tensor, paddle.Tensor):
                    pack(tensor)
        eager.reset_saved_tensors_hooks()
        try:
            original(ctx, *tensors)
        finally:  # Paddle registers hooks only with grad on, off in a PyLayer's forward
            with paddle.enable_grad():
                eager.register_saved_tensors_hooks(pack, unpack)

    context.save_for_backward = save_unhooked
    try:
        with paddle.autograd.saved_tensors_hooks(pack, unpack):
            yield
    finally:
        context.save_for_backward = original
