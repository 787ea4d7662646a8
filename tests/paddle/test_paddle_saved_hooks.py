"""The instrument's saved-tensor hooks (`implementations.stacks.paddle.saved_hooks`): Paddle's
own pair releases a `PyLayer`'s saved tuple once too often (pinned upstream, so that the day it
is fixed this fails and the guard can go); the guard's pair keeps the count and still hands
every saved tensor to `pack`."""

from __future__ import annotations

import contextlib
import ctypes
import sys

import numpy as np
import pytest

from implementations.stacks.paddle.loaded import paddle
from implementations.stacks.paddle.saved_hooks import saved_tensors_hooks

#: What the probe saw: the tuple's reference count around the container setter (`before`,
#: `after`), and whether save_for_backward's container came back packed (`packed`).
SEEN: dict[str, int] = {}


class Probe(paddle.autograd.PyLayer):
    """`y = 2 x`, whose forward sets its container to a tuple it holds (`direct`), or saves
    x three times (`save_for_backward`), and notes what it saw in `SEEN`."""

    @staticmethod
    def forward(ctx, x, direct):
        if not direct:
            ctx.save_for_backward(x, x, x)
            # Packed, each read of the container unpacks a new tuple (call_unpack_hook).
            SEEN["packed"] = ctx.container is not ctx.container
            return x * 2
        given = (x, x, x)
        held = [given]  # a second holder: a stolen reference cannot free it under the frame
        SEEN["before"] = sys.getrefcount(given)
        ctx.container = given  # the setter itself, with a tuple this frame holds
        SEEN["after"] = sys.getrefcount(given)
        for _ in range(SEEN["before"] - 1 - SEEN["after"]):  # give back what it stole
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(given))
        del held
        return x * 2

    @staticmethod
    def backward(ctx, dy):
        return dy * 2


def _probe(hooks, direct: bool) -> None:
    x = paddle.ones([2])
    x.stop_gradient = False
    with hooks:
        Probe.apply(x, direct)


def _identity():
    return paddle.autograd.saved_tensors_hooks(lambda t: t, lambda t: t)


def test_paddle_own_hooks_release_a_pylayer_tuple_once_too_often():
    # Unhooked, the container takes a reference (+1); under Paddle's pair, call_pack_hook
    # (eager_py_layer.cc) stores a packed copy and releases the borrowed tuple (-1).
    _probe(contextlib.nullcontext(), direct=True)
    assert SEEN["after"] - SEEN["before"] == 1
    _probe(_identity(), direct=True)
    assert SEEN["after"] - SEEN["before"] == -1


def test_save_for_backward_goes_through_that_setter_under_paddle_hooks_not_the_guard():
    _probe(_identity(), direct=False)
    assert SEEN["packed"]
    packed = []
    _probe(saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t), direct=False)
    assert not SEEN["packed"]
    assert len(packed) == 3  # save_for_backward's three, handed to pack by the guard


def test_the_guard_keeps_gradients_and_puts_save_for_backward_back():
    original = paddle.autograd.PyLayerContext.save_for_backward
    from paddle.distributed.fleet.utils import recompute

    def gradient(hooks) -> np.ndarray:
        x = paddle.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        x.stop_gradient = False
        with hooks:
            recompute(lambda t: paddle.nn.functional.relu(t) * t, x).sum().backward()
        return x.grad.numpy()

    packed = []
    guarded = gradient(saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t))
    assert np.array_equal(guarded, gradient(contextlib.nullcontext()))
    assert packed  # the region's input went to pack
    assert paddle.autograd.PyLayerContext.save_for_backward is original


def test_the_guard_puts_save_for_backward_back_on_an_error():
    original = paddle.autograd.PyLayerContext.save_for_backward
    with pytest.raises(RuntimeError, match="inside"), saved_tensors_hooks(lambda t: t, print):
        raise RuntimeError("inside")
    assert paddle.autograd.PyLayerContext.save_for_backward is original


def test_the_hooks_stay_on_after_a_region_saves():
    # A plain op after a region: its saved tensors still reach pack (the hooks go back on
    # under enable_grad: Paddle ignores a registration while grad is off, as in a forward).
    from paddle.distributed.fleet.utils import recompute

    x = paddle.to_tensor(np.ones((2, 3), np.float32))
    x.stop_gradient = False
    packed = []
    with saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        inside = recompute(lambda t: t * 2, x)
        after_region = len(packed)
        (inside * inside).sum()
    assert after_region == 1  # the region's input
    assert len(packed) > after_region  # the product's operands, packed after the region


def test_the_default_schedules_whose_saved_tuple_is_over_a_kib_are_the_two_that_crashed():
    # The README's count: a region saves its input and 4 parameters a block, a tuple of
    # 16 (GC head) + 24 + 8 bytes a tensor; over 1 KiB at L = 64 only in these two.
    from conformance.benchmark.schedules import schedules_at
    from implementations.measuring.placement import Placement

    largest = {
        schedule.label: max(
            (1 + 4 * len(r.blocks) for _, r in Placement.of(schedule, 64).regions()), default=0
        )
        for schedule in schedules_at(64)
    }
    over = {label: n for label, n in largest.items() if 16 + 24 + 8 * n > 1024}
    assert over == {"nested(2,2,2,2,2,2)": 129, "binomial(2)": 213}
    assert max(n for label, n in largest.items() if label not in over) == 117
