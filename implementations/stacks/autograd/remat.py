"""A checkpoint for autograd whose VJP traces the region again in the backward pass.

autograd builds every node's VJP while the forward pass runs: `VJPNode.__init__`
calls the primitive's VJP maker there and then. `autograd.checkpoint` (1.9.1) is a
primitive whose VJP maker is `make_vjp(fun, argnum)(*args)[0]`, so its region is
traced again *in the forward pass*, once per differentiated argument, and the
closures it returns hold every intermediate of those traces until the backward
pass: more is kept than without it, and the backward pass recomputes nothing
(`tests/autograd/test_upstream_checkpoint.py` pins this).

`checkpoint(fun)` here is the same recipe with the trace moved into the VJP
itself: the maker keeps the region's inputs (`args`, `kwargs`), and the VJP,
called by the backward pass, traces `fun` from them and pulls the cotangent
back through that trace. Imports autograd only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograd import make_vjp
from autograd.extend import defvjp_argnums, primitive

#: The functions a `checkpoint` runs as a region (the instrument counts the regions entered).
REGION_FUNCTIONS: set[Callable[..., Any]] = set()


def checkpoint(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun` as an autograd primitive that keeps its inputs and recomputes its body in backward.

    Make it once per function (a module-level name): autograd registers each
    primitive in process-wide tables (`primitive_vjps`) that never forget one.
    Keyword arguments are passed through and never differentiated.
    """
    wrapped = primitive(fun)
    REGION_FUNCTIONS.add(fun)

    def vjp_maker(argnums: tuple[int, ...], ans: Any, args: tuple, kwargs: dict) -> Callable:
        # Called in the forward pass: hold the region's inputs only (not `ans`).
        def vjp(g: Any) -> Any:
            # The recomputation: `fun` traced again, now that the backward pass needs it. Its
            # output is dropped here, not held while the cotangent is pulled back.
            pullback = make_vjp(fun, tuple(argnums))(*args, **kwargs)[0]
            return pullback(g)  # one gradient per argnum, in order

        return vjp

    defvjp_argnums(wrapped, vjp_maker)
    return wrapped
