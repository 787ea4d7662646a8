"""One meaning per figure, on eager torch: at L = 4, B = 8, F = 4, what the instrument counts
around the very call (block + instrument through the generic driver) equals the analytic count
of each placement, written here in units (one unit: one (B, F) float32 array), or torch's
declared departure, its count model in code (`block.early_stop_reruns`), never read off a
simulator of the same conventions.

The analytic counts, by hand from the exercise's block `relu(x @ W1 + b1) @ W2 + b2`:

- forward evaluations: the forward pass runs each of the L blocks once, both matmuls.
- backward reruns: the model reruns every block of every region. torch departs (early stop,
  `block.EARLY_STOP`): a region's rerun stops once the last tensor its forward saved is saved
  again, relu's output in its last block, so that block's `a@W2` is skipped, counted as
  skipped (not as half a block); the blocks before it run whole. every: each block once, x@W1
  only; segments(2): block 0 whole, block 1 x@W1 only; none: nothing.
- batch-growing saved bytes: a plain block keeps its input x_i (addmm's for dW1) and relu's
  output a_i: 2 units; a region keeps its input only: 1. none: 2L = 8; every: L = 4;
  segments(2): one region of 2 blocks (1) and a plain tail of 2 blocks (4): 5.
- the backward's matmuls (the gradient of the parameters, x data): the reruns' plus, per
  block, dW1, dW2 and da, and dx for every block but the first.
- the peak's fixed part (to x: no parameter gradient) is torch's CPU RNG state, which
  `checkpoint(preserve_rng_state=True)` stashes per region and forks once more while a region
  reruns: (regions + 1) states, `torch.get_rng_state().nbytes` each; none has none.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conformance.checking.checks import ConformanceError  # noqa: E402
from conformance.checking.properties.j_policies import check_policy_record  # noqa: E402
from implementations.measuring.driver import PlacedCase, bench_module, split_peak  # noqa: E402
from implementations.measuring.placement import Placement  # noqa: E402
from implementations.measuring.record import MATMULS, NotObservable  # noqa: E402
from implementations.policies import Policy  # noqa: E402
from implementations.stacks.torch import instrument, pytorch  # noqa: E402
from implementations.stacks.torch import policies as torch_policies  # noqa: E402
from tests.support import measuring_kit as kit  # noqa: E402

L, B, F = 4, 8, 4
UNIT = B * F * 4
STACK = bench_module("implementations.stacks.torch.block")
FIRST = MATMULS[:1]  # x@W1: an early-stopped rerun's

#: placement -> (the backward's reruns as (block, matmuls run), batch-growing units saved)
ANALYTIC = {
    "none": ((), 2 * L),
    "every": (tuple((b, FIRST) for b in range(L)), L),
    "segments(2)": (((0, MATMULS), (1, FIRST)), 1 + 2 * 2),
}


def _case(schedule: str, batch: int = B) -> PlacedCase:
    return kit.placed(STACK, schedule, L, batch, F)


def _regions(schedule: str) -> int:
    return sum(1 for _ in Placement.of(schedule, L).regions())


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones_with_torch_s_early_stop(schedule):
    reruns, _ = ANALYTIC[schedule]
    record = _case(schedule).counts()
    kit.assert_forward_once(record, L)
    backward = record.evaluated("backward")
    assert sorted((e.block, e.ran) for e in backward) == sorted(reruns)
    assert sum(len(e.skipped) for e in backward) == sum(len(MATMULS) - len(r) for _, r in reruns)
    ran = sum(len(r) for _, r in reruns)
    assert (record.block_matmuls("forward"), record.block_matmuls("backward")) == (2 * L, ran)
    gradient = 3 * L + (L - 1)  # dW1, dW2, da per block; dx but for block 0
    assert (record.forward_matmuls, record.backward_matmuls) == (2 * L, ran + gradient)
    assert (record.regions, record.reruns) == (_regions(schedule), _regions(schedule))


@pytest.mark.parametrize("schedule", ["every", "segments(2)", "nested(2,2)", "binomial(1)"])
def test_the_early_stop_departure_predicts_every_rerun(schedule):
    # torch's departure is a count model in code; held to the instrument, nested ones included
    record = _case(schedule).counts()
    found = sorted((e.block, len(e.ran)) for e in record.evaluated("backward"))
    assert found == sorted(STACK.block.early_stop_reruns(Placement.of(schedule, L).items))


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(schedule):
    kit.assert_saved_units(_case(schedule), _case(schedule, 2 * B), ANALYTIC[schedule][1], "device")


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_peak_s_fixed_part_is_torch_s_rng_state_per_region(schedule):
    record = split_peak(_case(schedule), _case(schedule, 2 * B), wrt="x")
    regions = _regions(schedule)
    states = (regions + 1) * torch.get_rng_state().nbytes if regions else 0
    assert record.peak_fixed_bytes == states
    assert record.peak_batch_bytes % UNIT == 0
    kit.assert_peak_split(record, ANALYTIC[schedule][1] * UNIT)


def test_a_figure_not_seen_says_why():
    record = _case("every").peak()
    assert isinstance(record.saved, NotObservable)
    assert str(record.saved).startswith("not observable: ")
    assert str(NotObservable(instrument.UNSEEN_CACHE)).startswith("not observable: ")


def _own_model(policy_fn, handed: bool):
    """An outside port's call: its own model under a selective policy, handing on the watch's
    `context_fn` or not."""
    params = [torch.randn(F, F, requires_grad=True) for _ in range(2)]
    x = torch.randn(B, F)

    def mlp(x):
        return torch.relu(x @ params[0]) @ params[1]

    def call():
        watch = instrument.active()
        context_fn = torch_policies.context_fn(policy_fn)
        if handed:
            context_fn = watch.context_fn(policy_fn)
        y = torch.utils.checkpoint.checkpoint(mlp, x, use_reentrant=False, context_fn=context_fn)
        torch.autograd.grad(y, params, torch.ones_like(y))

    return instrument.observe(call, x)


def test_a_selective_cache_the_port_did_not_hand_on_is_not_observable_and_j_says_so():
    hidden = _own_model(torch_policies.save_dots, handed=False)
    assert hidden.saved_roles == {"x"}  # the cache's outputs are unseen
    assert hidden.not_observable == (f"not observable: {instrument.UNSEEN_CACHE}",)
    with pytest.raises(ConformanceError, match=r"saves \{x\}.*not observable: a selective"):
        check_policy_record(pytorch.PyTorch(), Policy("save_dots"), hidden)
    handed = _own_model(torch_policies.save_dots, handed=True)
    assert handed.not_observable == ()
    assert handed.saved_roles == {"x", "d1", "y"}  # the matmuls' outputs, read from the cache


def test_the_readme_says_how_torch_measures():
    kit.assert_names_offered(STACK, kit.measurements_section("torch"))
