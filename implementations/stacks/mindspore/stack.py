"""The MindSpore `Stack`: tensors, the precision report, the numpy init, MindSpore's instrument.

Imports mindspore (and numpy). Loading it sets PyNative mode and *warms* the
stack: MindSpore 2.10.0 under numpy 2 fails the first `value_and_grad` of a
function that closes over a Tensor once (`evidence.run_first_call`), so the
stack runs one such call now, and keeps what it said in `FIRST_CALL`
(pinned in tests/mindspore), so that no call of a port's is that first one.
That expected failure prints a long numpy traceback on stderr: it is kept in
`FIRST_CALL_STDERR` instead. Op launches are made synchronous (see below).
"""

from __future__ import annotations

from ..numpy import on_numpy_init
from . import arrays, instrument
from .loaded import ms
from .quiet import captured_stderr

ms.set_context(mode=ms.PYNATIVE_MODE)
# Synchronous op launches: MindSpore's asynchronous pipeline hands each small op to its
# dispatch threads, which costs ~10 times the CPU of the op itself on the exercise's shapes
# (a VJP: 74 ms of CPU asynchronous, 8.5 ms synchronous). The ops and their results are the same.
ms.runtime.launch_blocking()


def run_first_call() -> str | None:
    """The first PyNative `value_and_grad` of a function that closes over a Tensor, once.

    MindSpore 2.10.0 under numpy 2 fails it once with `SystemError`
    ("py_parse.cc:132 Numpy init failed"), and every later call works.
    Returns the error's text when it failed, None when it ran.
    """
    weight = ms.Tensor([2.0], ms.float32)
    try:
        ms.value_and_grad(lambda v: (v * weight).sum())(ms.Tensor([1.0], ms.float32))
    except SystemError as error:
        return f"{type(error).__name__}: {error}"
    return None


_warm_up_stderr: list[str] = []
with captured_stderr(_warm_up_stderr):
    #: What the warming call raised (its text), or None if it ran: MindSpore's first-call glitch.
    FIRST_CALL: str | None = run_first_call()
#: What the warming call printed on stderr (kept from the user's terminal: it is expected).
FIRST_CALL_STDERR: str = "".join(_warm_up_stderr)

#: MindSpore: tensors to and from numpy, Flax's init in numpy, its instrument on a port's own
#: call (`instrument.observe(call, x, parameters)`).
STACK = on_numpy_init("mindspore", arrays, instrument.observe, ("mindspore",))
