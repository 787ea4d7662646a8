"""A port's block with variables and RNGs held to its declaration, part by part.

`held_to_declaration(port, variant, declaration)` runs the port's `state_step` with the
checkpoint on and off from the same seed and checks, each against the numpy block
(`implementations.stateful_reference`) on the first exercise's parameters drawn by the numpy
init (never the port's own numbers):

- the forward output is the numpy block's for the mask the forward drew;
- replay: the recompute's masks equal the forward's, and the gradients are the forward
  mask's; or, declared not to replay, the declared count of fresh masks, which differ from
  the forward's, and gradients that are the fresh mask's;
- the stream: the RNG state after the step is the same on and off, or not, as declared (at
  rate 0, where Keras makes no seed generator, not checked);
- the updates: the declared count with the checkpoint on, 1 off, and the running statistics
  are the numpy update applied that many times, in the port's momentum convention.
"""

from __future__ import annotations

import numpy as np

from implementations import stateful_reference
from implementations.stacks.numpy import canonical_params
from implementations.stateful import NotObservable, StateDeclaration
from implementations.stateful_arguments import initial

B, D, F, RATE, SEED = 8, 5, 4, 0.5, 3


def inputs() -> tuple[np.ndarray, np.ndarray]:
    """x `(B, D)` and the cotangent `(B, F)`."""
    rng = np.random.default_rng(0)
    return rng.normal(size=(B, D)).astype(np.float32), rng.normal(size=(B, F)).astype(np.float32)


def _within(step, mask, x, cotangent, arrays, rate) -> list[str]:
    """The names of the gradients (and "y") that miss the numpy block's for `mask`."""
    expected = stateful_reference.step(arrays, x, mask, rate, cotangent)
    bounds = stateful_reference.bounds(arrays, x, mask, rate, cotangent, expected)
    missed = [n for n, g in expected.grads.items() if np.any(np.abs(step.grads[n] - g) > bounds[n])]
    return missed


def held_to_declaration(port, variant: str, declaration: StateDeclaration, rate: float = RATE):
    """Check one variant of `port` against `declaration` (see the module's docstring); return
    the checkpointed step."""
    x, cotangent = inputs()
    arrays = initial(canonical_params(SEED, D, F))
    on = port.state_step(SEED, x, F, rate, cotangent, checkpoint=True, variant=variant)
    off = port.state_step(SEED, x, F, rate, cotangent, checkpoint=False, variant=variant)
    for name, step in (("on", on), ("off", off)):
        expected = stateful_reference.step(arrays, x, step.mask, rate, cotangent)
        bounds = stateful_reference.bounds(arrays, x, step.mask, rate, cotangent, expected)
        assert np.all(np.abs(step.y - expected.y) <= bounds["y"]), f"{name}: y is not its mask's"
    assert off.recompute_masks == (), "nothing reruns with the checkpoint off"
    assert _within(off, off.mask, x, cotangent, arrays, rate) == [], "off: the VJP is wrong"
    if declaration.replay or rate == 0.0:  # at rate 0 nothing is drawn: nothing to redraw
        assert all(np.array_equal(m, on.mask) for m in on.recompute_masks), "a fresh mask"
        assert _within(on, on.mask, x, cotangent, arrays, rate) == []
    else:
        count = declaration.degradation("replay").count
        assert len(on.recompute_masks) == count, on.recompute_masks
        changed = np.mean(on.recompute_masks[-1] != on.mask)
        assert changed > 0, "declared a fresh mask, but the recompute replayed the forward's"
        assert _within(on, on.recompute_masks[-1], x, cotangent, arrays, rate) == []
    if rate > 0.0:  # the declaration is the drawing block's: at rate 0 some draw nothing
        assert not isinstance(on.rng_after, NotObservable), on.rng_after
        kept = on.rng_after == off.rng_after
        assert kept == declaration.stream_kept, f"stream kept: {kept}, declared otherwise"
    for step, updates in ((on, declaration.updates), (off, 1)):
        if not isinstance(step.updates, NotObservable):
            assert step.updates == updates, (step.updates, updates)
        expected = stateful_reference.step(arrays, x, step.mask, rate, cotangent)
        mean, var = stateful_reference.running(
            expected.mean, expected.var, B, updates, declaration.momentum,
            declaration.running_var, declaration.var_start,
        )  # fmt: skip
        bounds = stateful_reference.bounds(arrays, x, step.mask, rate, cotangent, expected)
        assert np.all(np.abs(step.running_mean - mean) <= bounds["mean"]), "running mean"
        assert np.all(np.abs(step.running_var - var) <= bounds["var"]), "running var"
    return on
