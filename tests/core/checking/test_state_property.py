"""Property (l) on a numpy port written from the contract (`implementations.stateful`): the
right step passes every part, and each bug fails its own part, naming it, without JAX."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import l_state
from conformance.checking.strategies import StateCase
from implementations import stateful, stateful_reference
from implementations.stateful import (
    DEFAULT_VARIANT,
    Momentum,
    StateDeclaration,
    StateDegradation,
    StateStep,
)

TWICE = StateDegradation("updates", 2, "pytorch#96136", "the recompute updates again")


class NumpyBlock:
    """The block in numpy, its mask from numpy's generator seeded by `seed`; each keyword
    is one bug (or one declared degradation)."""

    name = "numpy_block"
    state_variants: ClassVar[dict[str, str]] = {DEFAULT_VARIANT: "a hand-written recompute"}

    def __init__(self, declaration=None, *, fresh=False, moves=False, updates=1, scale=True,
                 kept=stateful.MOMENTUM, swapped=False):  # fmt: skip
        self.state_declarations = {
            DEFAULT_VARIANT: declaration or StateDeclaration("recompute", "default_rng(seed)")
        }
        self.fresh, self.moves, self.updates, self.scale, self.kept = (
            fresh,
            moves,
            updates,
            scale,
            kept,
        )
        self.swapped = swapped  # keeps with the probability rate, not 1 - rate

    def state_step(
        self, seed, x, features, rate, cotangent, checkpoint=True, variant=DEFAULT_VARIANT
    ):
        rng = np.random.default_rng(seed)
        arrays = l_state.arrays_of(StateCase(seed, x, features, rate, cotangent))
        mask = rng.random((x.shape[0], features)) >= (1.0 - rate if self.swapped else rate)
        redrawn = rng.random(mask.shape) >= rate if self.fresh and checkpoint else mask
        used = rate if self.scale else 0.0  # unscaled: the kept elements as they are
        forward = stateful_reference.step(arrays, x, mask, used, cotangent)
        backward = stateful_reference.step(arrays, x, redrawn, used, cotangent)
        n = self.updates if checkpoint else 1
        mean, var = stateful_reference.running(
            forward.mean, forward.var, x.shape[0], n, Momentum("keep", self.kept)
        )
        draws = 1 + (self.moves and checkpoint)
        return StateStep(
            y=forward.y.astype(np.float32),
            grads={k: v.astype(np.float32) for k, v in backward.grads.items()},
            mask=mask, recompute_masks=(redrawn,) if checkpoint else (),
            running_mean=mean.astype(np.float32), running_var=var.astype(np.float32),
            rng_before=(seed, 0), rng_after=(seed, draws),
        )  # fmt: skip


def _case(rate=0.5) -> StateCase:
    rng = np.random.default_rng(0)
    x, cotangent = rng.normal(size=(8, 5)), rng.normal(size=(8, 4))
    return StateCase(3, x.astype(np.float32), 4, rate, cotangent.astype(np.float32))


def _check(port, rate=0.5):
    return l_state.check_state_property(port, None, _case(rate))


def test_the_right_step_passes_every_part():
    assert _check(NumpyBlock()) < 1.0
    assert _check(NumpyBlock(), rate=0.0) < 1.0


@pytest.mark.parametrize(
    ("port", "rate", "part", "said"),
    [
        (NumpyBlock(fresh=True), 0.5, "(l.1) replay", "fresh mask"),
        (NumpyBlock(moves=True), 0.5, "(l.2) the stream", "differs with the checkpoint on and"),
        (
            NumpyBlock(updates=2),
            0.5,
            "(l.3) state once",
            "2 of the canonical's updates, expected 1",
        ),
        (NumpyBlock(kept=0.01), 0.5, "(l.3) state once", "no number (0 to 3)"),
        # At rate 0 the step is right; only the law's own steps, at `LAW_RATE`, see it.
        (NumpyBlock(scale=False), 0.0, "(l.4) the mask's law", "scaled by 1, expected"),
        # At rate 0.5 keeping with the probability rate is right too; the law's rate is not.
        (NumpyBlock(swapped=True), 0.5, "(l.4) the mask's law", "expected 0.75: two-sided"),
    ],
    ids=[
        "fresh mask",
        "stream moved",
        "updated twice",
        "momentum swapped",
        "unscaled",
        "keep and drop swapped",
    ],
)
def test_each_bug_fails_its_own_part(port, rate, part, said):
    with pytest.raises(ConformanceError) as raised:
        _check(port, rate)
    assert part in str(raised.value)
    assert said in str(raised.value)


def test_a_declared_degradation_is_held_to_its_count_both_ways():
    twice = StateDeclaration("recompute", "default_rng(seed)", updates=2, degradations=(TWICE,))
    assert _check(NumpyBlock(twice, updates=2)) < 1.0
    with pytest.raises(ConformanceError, match="1 of the canonical's updates, expected 2"):
        _check(NumpyBlock(twice, updates=1))


def test_a_declared_fresh_mask_is_held_to_the_recompute_s_mask():
    fresh = StateDegradation("replay", 1, "pytorch#190717", "recomputes with a fresh mask")
    declared = StateDeclaration("recompute", "global", replay=False, degradations=(fresh,))
    assert _check(NumpyBlock(declared, fresh=True)) < 1.0
    with pytest.raises(ConformanceError, match="0 recompute"):
        _check(NumpyBlock(declared, fresh=False))


class Blind(NumpyBlock):
    """A port whose instrument cannot see the forward's mask."""

    def state_step(self, *args, **kwargs):
        found = super().state_step(*args, **kwargs)
        return StateStep(**{**found.__dict__, "mask": stateful.NotObservable("compiled away")})


def test_an_unobservable_mask_fails_replay_with_its_reason_never_a_pass():
    with pytest.raises(ConformanceError, match="not observable: compiled away"):
        _check(Blind())


def test_at_rate_0_an_unobservable_mask_is_every_element_kept():
    case = _case(0.0)
    found = l_state.step_of(Blind(), case, True, DEFAULT_VARIANT)
    assert found.mask.all()
    assert found.mask.shape == (8, 4)


def test_the_binomial_test_s_false_alarm_is_what_it_states():
    # Exact: the two-sided p-value of the most likely count is 1; of all-kept, 2 * 0.5**n.
    assert l_state.binomial_p(256, 512, 0.5) == pytest.approx(1.0)
    assert l_state.binomial_p(512, 512, 0.5) == pytest.approx(2 * 0.5**512, rel=1e-6)
    assert (
        l_state.binomial_p(330, 512, 0.5) < l_state.FALSE_ALARM < l_state.binomial_p(300, 512, 0.5)
    )


def test_the_law_draws_its_512_elements_whatever_the_shape():
    assert l_state.law_seeds(32, 4) == range(4)  # the menu's shape: 4 steps of 128
    assert l_state.law_seeds(8, 4) == range(16)
    assert l_state.law_seeds(4, 6) == range(22)  # 528 elements
    assert l_state.law_seeds(16, 3) == range(11)


def test_the_law_s_rate_tells_a_kept_share_0_1_off_and_keep_from_drop():
    rate = l_state.LAW_RATE
    assert rate != 0.5  # at 0.5, keeping with the probability rate has the right law
    keep, draws = 1.0 - rate, l_state.LAW_DRAWS
    # 0.1 off the kept share is 5.2 standard deviations on 512 draws: past 4.9, the false alarm's
    assert 0.1 / np.sqrt(keep * (1 - keep) / draws) == pytest.approx(5.23, abs=0.01)
    assert l_state.binomial_p(round((keep - 0.1) * draws), draws, keep) < l_state.FALSE_ALARM
    assert l_state.binomial_p(round((keep + 0.1) * draws), draws, keep) < l_state.FALSE_ALARM
    assert l_state.binomial_p(round(rate * draws), draws, keep) < l_state.FALSE_ALARM
    assert l_state.binomial_p(round(keep * draws), draws, keep) == pytest.approx(1.0)
