"""The second exercise's contract (`implementations.stateful`): the step's record crosses a
wire whole, a declaration's departures each carry their degradation, bad arguments are named."""

from __future__ import annotations

import numpy as np
import pytest

from implementations import stateful, stateful_reference
from implementations.stateful import (
    Momentum,
    NotObservable,
    StateDeclaration,
    StateDegradation,
    StateStep,
)


def _step(**changes) -> StateStep:
    rng = np.random.default_rng(0)
    fields = {
        "y": rng.normal(size=(2, 3)).astype(np.float32),
        "grads": {n: rng.normal(size=(2,)).astype(np.float32) for n in stateful.STATE_GRAD_NAMES},
        "mask": rng.random((2, 3)) < 0.5,
        "recompute_masks": (rng.random((2, 3)) < 0.5,),
        "running_mean": np.zeros(3, np.float32),
        "running_var": np.ones(3, np.float32),
        "counters": {"num_batches_tracked": 2},
        "updates": 2,
        "rng_before": b"\x01\x02",
        "rng_after": (7, 9),
    }
    return StateStep(**{**fields, **changes})


def test_a_step_crosses_the_wire_whole():
    step = _step()
    back = StateStep.from_wire(step.to_wire())
    assert np.array_equal(back.y, step.y)
    assert back.y.dtype == np.float32
    assert np.array_equal(back.mask, step.mask)
    assert back.mask.dtype == bool
    assert all(np.array_equal(back.grads[n], step.grads[n]) for n in step.grads)
    assert np.array_equal(back.recompute_masks[0], step.recompute_masks[0])
    assert back.counters == {"num_batches_tracked": 2}
    assert back.updates == 2
    assert back.rng_before == (1, 2)
    assert back.rng_after == (7, 9)


def test_what_is_not_observable_crosses_the_wire_with_its_reason():
    unseen = NotObservable("compiled away")
    back = StateStep.from_wire(
        _step(mask=unseen, recompute_masks=unseen, updates=unseen, rng_after=unseen).to_wire()
    )
    assert back.mask == back.recompute_masks == back.updates == back.rng_after == unseen
    assert str(unseen) == "not observable: compiled away"


def test_a_step_without_every_gradient_is_refused_naming_what_is_missing():
    with pytest.raises(ValueError, match=r"missing \['x'\]"):
        _step(grads={n: np.zeros(1) for n in stateful.STATE_PARAM_NAMES})


def test_momentum_conventions_convert_to_the_share_kept():
    assert Momentum("keep", 0.99).kept == 0.99
    assert Momentum("new", 0.01).kept == pytest.approx(0.99)
    with pytest.raises(ValueError, match="convention"):
        Momentum("old", 0.5)


def test_a_departure_needs_its_degradation_and_a_degradation_its_departure():
    twice = StateDegradation("updates", 2, "pytorch#96136", "the recompute updates again")
    assert StateDeclaration("checkpoint", "global", updates=2, degradations=(twice,)).updates == 2
    with pytest.raises(ValueError, match="updates departs from the canonical"):
        StateDeclaration("checkpoint", "global", updates=2)
    with pytest.raises(ValueError, match="a degradation of updates is declared"):
        StateDeclaration("checkpoint", "global", degradations=(twice,))
    with pytest.raises(ValueError, match="names its upstream"):
        StateDegradation("stream", 1, "", "moves")


@pytest.mark.parametrize("rate", [1.0, -0.1, "0.5", True])
def test_a_bad_rate_is_named(rate):
    with pytest.raises(ValueError, match="rate"):
        stateful.check_rate(rate)


def test_a_batch_of_one_is_refused_and_the_callers_x_is_kept():
    with pytest.raises(ValueError, match=r"x must have shape \(B, D\) with B >= 2"):
        stateful.check_batch(np.zeros((1, 3)))
    x = np.ones((2, 3), np.float64)
    stateful.check_batch(x)[0, 0] = 5
    assert x[0, 0] == 1


def test_the_reference_update_is_flax_s_and_torch_s_once_converted():
    mean, var = np.array([2.0]), np.array([4.0])
    flax = stateful_reference.running(mean, var, batch=4)
    torch = stateful_reference.running(mean, var, 4, momentum=Momentum("new", 0.01))
    assert flax[0] == pytest.approx(0.02)
    assert flax[1] == pytest.approx(0.99 + 0.04)
    assert torch[0] == pytest.approx(flax[0])
    assert torch[1] == pytest.approx(flax[1])
    twice = stateful_reference.running(mean, var, 4, updates=2, variance="unbiased")
    assert twice[0] == pytest.approx(0.02 * 0.99 + 0.02)
    assert twice[1] == pytest.approx(0.99 * (0.99 + 0.01 * 16 / 3) + 0.01 * 16 / 3)


def test_a_declaration_crosses_the_wire_whole():
    twice = StateDegradation("updates", 2, "pytorch#96136", "the recompute updates again")
    declared = StateDeclaration(
        "checkpoint(block)", "torch.manual_seed(seed)", updates=2, momentum=Momentum("new", 0.01),
        running_var="unbiased", counters=("num_batches_tracked",), degradations=(twice,),
        fix="torch_compile:default", repro="repros/torch_batchnorm_twice.py",
    )  # fmt: skip
    assert StateDeclaration.from_wire(declared.to_wire()) == declared
    with pytest.raises(ValueError, match="updates departs"):
        StateDeclaration.from_wire({**declared.to_wire(), "degradations": []})
