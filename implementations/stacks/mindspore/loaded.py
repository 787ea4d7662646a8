"""MindSpore, imported where it can be: every module of this stack imports it from here.

MindSpore cannot load after Paddle in one process (MindSpore 2.10.0, Paddle
3.3.1: "undefined symbol: dnnl_threadpool_interop_stream_create", both ship
oneDNN). Where Paddle is loaded already, this module raises
`StackUnavailable` instead: the registry reports the port as loading in a
process of its own. MindSpore first, then Paddle, works.
"""

import importlib.util
import sys

from ...contract import StackUnavailable

# Only if MindSpore is installed: a missing one is "not installed" (the import below says so),
# never "loads in a process of its own".
if (
    sys.modules.get("paddle") is not None
    and "mindspore" not in sys.modules
    and importlib.util.find_spec("mindspore") is not None
):
    raise StackUnavailable(
        "MindSpore cannot be imported after Paddle in one process (both ship oneDNN: "
        "undefined symbol dnnl_threadpool_interop_stream_create; MindSpore 2.10.0, "
        "Paddle 3.3.1); it loads in a process of its own"
    )

import mindspore as ms

__all__ = ["ms"]
