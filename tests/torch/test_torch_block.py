"""The torch stack's one block and builder (`block`), and its one dispatch-mode counter
(`instrument.Ops`), each against counts derived by hand for a block `Linear -> relu -> Linear`
on a 2-D x (each Linear one `aten.addmm`; its backward one `aten.mm` for the weight and one
for the input, none for an input that needs no grad)."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from implementations.measuring.placement import Placement  # noqa: E402
from implementations.schedules import Region, Schedule  # noqa: E402
from implementations.stacks.torch import block as blocks  # noqa: E402
from implementations.stacks.torch.instrument import Ops, Roles  # noqa: E402

B, F = 3, 4


def canonical(L: int, seed: int = 0) -> list[tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(seed)
    shapes = ((F, F), (F,), (F, F), (F,))  # kernels (in, out), as the canonical blocks
    return [tuple(rng.standard_normal(s).astype(np.float32) for s in shapes) for _ in range(L)]


def test_parameters_are_torch_s_layout_as_fresh_leaves():
    data = canonical(2)
    params = blocks.parameters(data)
    assert len(params) == 2
    for (w1, b1, w2, b2), (k1, c1, k2, _) in zip(params, data, strict=True):
        np.testing.assert_array_equal(w1.detach().numpy(), k1.T)  # (out, in)
        np.testing.assert_array_equal(w2.detach().numpy(), k2.T)
        np.testing.assert_array_equal(b1.detach().numpy(), c1)
        assert all(p.requires_grad and p.is_leaf and p.is_contiguous() for p in (w1, b1, w2, b2))
        w1.data.add_(1)  # a copy: the caller's arrays are never written
        assert not np.array_equal(w1.detach().numpy(), k1.T)


def test_the_block_is_linear_relu_linear():
    (w1, b1, w2, b2), x = blocks.parameters(canonical(1))[0], torch.ones(B, F)
    expected = torch.relu(x @ w1.T + b1) @ w2.T + b2
    torch.testing.assert_close(blocks.block(x, w1, b1, w2, b2), expected)
    torch.testing.assert_close(blocks.block(x, w1, b1, w2, b2, tag_h=True), expected)


class _HAlive:
    """An observer: whether the first Linear's output (h) is still alive when the second runs."""

    def __init__(self):
        self.addmms, self.h, self.alive_at_second = 0, None, None

    def before(self, func, args, kwargs):
        if func is torch.ops.aten.addmm.default and self.addmms == 1:
            self.alive_at_second = self.h() is not None

    def after(self, func, args, out):
        if func is torch.ops.aten.addmm.default:
            self.addmms += 1
            if self.addmms == 1:
                self.h = weakref.ref(out)


@pytest.mark.parametrize("tag_h", [False, True])
def test_the_block_drops_h_before_its_second_linear(tag_h):
    # Nothing saves h (relu's backward reads relu's output): a Python name holding it would
    # keep one B x F tensor more alive at the peak, which bench --schedules reads.
    params, watch = blocks.parameters(canonical(1))[0], _HAlive()
    with Ops(watch):
        blocks.block(torch.ones(B, F), *params, tag_h=tag_h)
    assert watch.addmms == 2
    assert watch.alive_at_second is False


@pytest.mark.parametrize(
    "schedule", ["none", "every", "segments(2)", "nested(2,2)", "binomial(2)", "binomial(3)"]
)
def test_a_placement_runs_its_regions_as_placed_with_the_plain_gradients(schedule):
    L = 4
    params = blocks.parameters(canonical(L))
    flat = [p for ps in params for p in ps]
    x = torch.linspace(-1, 1, B * F).reshape(B, F)
    items = Schedule.parse(schedule).placement(L)
    asked: list[range] = []

    def checkpoint_of(region: Region) -> blocks.Checkpoint:
        asked.append(region.blocks)
        return blocks.non_reentrant()

    regions = blocks.Regions()
    y = blocks.stack(items, regions.counting(checkpoint_of))(params, x)
    entered = regions.entered  # the forward pass's, before any rerun
    plain = blocks.stack(Schedule.parse("none").placement(L), checkpoint_of)(params, x)
    torch.testing.assert_close(y, plain)
    grads, plain_grads = (torch.autograd.grad(out.sum(), flat) for out in (y, plain))
    for a, b in zip(grads, plain_grads, strict=True):
        torch.testing.assert_close(a, b)

    def walk(items):  # the regions of the placement, outer before inner
        for item in items:
            if isinstance(item, Region):
                yield item.blocks
                yield from walk(item.items)

    assert asked == list(walk(items))  # each region's checkpoint chosen for that region
    assert entered == len(asked)  # each entered once in the forward pass


def test_each_region_gets_the_checkpoint_chosen_for_it():
    params = blocks.parameters(canonical(2))
    used = []

    def tracing(name):
        def region(function, x, *p):
            used.append((name, len(p)))
            return function(x, *p)

        return region

    items = (Region((0,)), Region((1,)))
    blocks.stack(items, lambda r: tracing(f"r{r.blocks.start}"))(params, torch.ones(B, F))
    assert used == [("r0", 4), ("r1", 4)]  # the region's own blocks' params, as arguments


def test_ops_splits_the_matmuls_by_phase():
    params = blocks.parameters(canonical(1))
    x = torch.ones(B, F)  # data: no gradient, so block 0's input has no mm
    for schedule, backward in (("none", 3), ("every", 4)):
        stack = blocks.stack(
            Schedule.parse(schedule).placement(1), lambda _: blocks.non_reentrant()
        )
        with Ops() as ops:
            torch.autograd.grad(stack(params, x).sum(), params[0])
        assert ops.count(["aten.addmm"], "forward") == 2
        assert ops.matmuls("forward") == 2
        # dW2, dx2, dW1: 3 mm; a checkpoint reruns the first addmm (torch's early stop ends
        # the rerun once relu's output, the last tensor the backward needs, is made again)
        assert ops.matmuls("backward") == backward
        assert ops.matmuls() == 2 + backward
        rerun = ops.recomputed()
        assert rerun.get("aten.addmm", 0) == backward - 3
        assert ops.count(phase="backward", grad=True) == sum(rerun.values())


def test_roles_observe_the_forward_only_and_functional_only_skips_writes():
    t = torch.ones(B, F)  # made outside the counter: only the in-place write below names it
    ptr = t.untyped_storage().data_ptr()
    named, functional = Roles(), Roles(functional_only=True)
    with Ops(named, functional):
        t.add_(1)
    assert named.role(ptr) == "h"
    assert functional.role(ptr) == ""


@pytest.mark.parametrize(
    ("policy", "policies", "rerun_addmm"),
    [
        ("", {}, 2),  # a full region reruns its first addmm (early stop), two regions: 2
        ("save_dots", {}, 0),  # the matmuls' outputs are saved: none reruns
        ("", {0: "save_dots"}, 1),  # region 0 saves its dots, region 1 reruns one
        ("save_dots", {1: "full"}, 1),
    ],
)
def test_place_runs_each_region_under_its_own_policy(policy, policies, rerun_addmm):
    params = blocks.parameters(canonical(2))
    placement = Placement(Schedule.parse("every").placement(2), policy, policies)
    with Ops() as ops:
        y = blocks.place(placement)(torch.ones(B, F), *(p for ps in params for p in ps))
        torch.autograd.grad(y.sum(), [p for ps in params for p in ps])
    assert ops.recomputed().get("aten.addmm", 0) == rerun_addmm


def test_place_refuses_a_policy_eager_torch_cannot_run_in_a_region():
    with pytest.raises(ValueError, match=r"policy 'budget\(0\.5\)' is not expressible"):
        blocks.place(Placement(Schedule.parse("every").placement(1), "budget(0.5)"))
