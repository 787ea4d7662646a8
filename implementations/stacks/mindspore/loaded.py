"""MindSpore, imported where it can be: every module of this stack imports it from here.

MindSpore cannot load after Paddle in one process (MindSpore 2.10.0, Paddle
3.3.1: "undefined symbol: dnnl_threadpool_interop_stream_create", both ship
oneDNN). Where Paddle is loaded already, this module raises
`StackUnavailable` instead: the registry reports the port as loading in a
process of its own. MindSpore first, then Paddle, works.
"""

from ..load_order import refuse_after

refuse_after(
    "paddle",
    "mindspore",
    "MindSpore cannot be imported after Paddle in one process (both ship oneDNN: "
    "undefined symbol dnnl_threadpool_interop_stream_create; MindSpore 2.10.0, "
    "Paddle 3.3.1); it loads in a process of its own",
)

import mindspore as ms  # noqa: E402 (only once the load order allows it)

__all__ = ["ms"]
