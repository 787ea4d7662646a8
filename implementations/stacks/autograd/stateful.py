"""The block with variables and RNGs in autograd (`implementations.stateful`, property (l)).

Block = `x @ w1 + b1 -> batch norm (the batch's mean and biased variance, epsilon 1e-5) ->
relu -> dropout(rate) -> @ w2 + b2` on numpy arrays, kernels `(in, out)`. autograd has no
state and no RNG of its own: the running statistics are the caller's numpy arrays, updated
from the block as a side effect (momentum 0.99, Flax's convention), and dropout draws from
numpy.

Three API variants, side by side:

- `default`: the port's deferred checkpoint (`remat.checkpoint`) with dropout from numpy's
  global generator after `np.random.seed(seed mod 2**32)`, the statistics updated in the block: its
  VJP traces the block again in the backward pass, so a second draw and a second update.
- `upstream`: `autograd.checkpoint` itself (1.9.1), the same block taking its arrays as one
  tuple: its VJP maker traces the block again while the forward pass runs, once per
  differentiated argument (here one), with the same two consequences.
- `explicit_seed`: the fix: the mask from `np.random.default_rng((seed, 1))`, made inside
  the block from the seed (so every trace draws the same mask, and numpy's global generator
  is never read), and the batch statistics written to a slot the step applies once.

The instrument is the block's own: each mask it draws and each update, as they happen.
Imports autograd and numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import autograd
import autograd.numpy as anp
import numpy as np
from autograd import make_vjp
from autograd.builtins import tuple as boxed_tuple
from autograd.tracer import getval

from ...stateful import EPSILON, MOMENTUM, StateStep
from ...stateful_port import drawn
from .block import relu
from .remat import checkpoint

NAMES = ("w1", "b1", "gamma", "beta", "w2", "b2", "x")
#: The fix's stream beside the seed: `default_rng((seed, EXPLICIT_STREAM))`.
EXPLICIT_STREAM = 1


@dataclass
class Step:
    """What one step's traces share (passed as a keyword, never differentiated): how the
    block draws and updates, and what the instrument saw."""

    rate: float
    seed: int
    explicit: bool
    mean: np.ndarray
    var: np.ndarray
    masks: list[np.ndarray] = field(default_factory=list)
    updates: int = 0
    slot: tuple[np.ndarray, np.ndarray] | None = None

    def draw(self, shape: tuple[int, ...]) -> np.ndarray:
        if self.explicit:
            uniform = np.random.default_rng((self.seed, EXPLICIT_STREAM)).random(shape)
        else:
            uniform = np.random.rand(*shape)  # noqa: NPY002 - numpy's global generator, on purpose
        kept = uniform >= self.rate
        self.masks.append(kept)
        return kept

    def statistics(self, mean: np.ndarray, var: np.ndarray) -> None:
        if self.explicit:  # the fix: the trace writes the slot, the step updates once
            self.slot = (mean, var)
        else:
            self.update(mean, var)

    def update(self, mean: np.ndarray, var: np.ndarray) -> None:
        self.mean = MOMENTUM * self.mean + (1 - MOMENTUM) * mean
        self.var = MOMENTUM * self.var + (1 - MOMENTUM) * var
        self.updates += 1


def block(w1, b1, gamma, beta, w2, b2, x, *, step: Step):
    """The block's forward on `(B, D)` x, drawing and updating through `step`."""
    h = anp.dot(x, w1) + b1
    mean = anp.mean(h, axis=0)
    c = h - mean
    var = anp.mean(c * c, axis=0)
    step.statistics(np.asarray(getval(mean)), np.asarray(getval(var)))
    a = relu(c / anp.sqrt(var + EPSILON) * gamma + beta)
    if step.rate:
        kept = step.draw(a.shape)
        a = a * kept.astype(np.float32) * np.float32(1.0 / (1.0 - step.rate))
    return anp.dot(a, w2) + b2


def packed_block(arrays, *, step: Step):
    """`block` on its seven arrays as one tuple: `autograd.checkpoint`'s VJP maker traces the
    block once per differentiated argument, so one argument is one trace."""
    return block(*arrays, step=step)


#: The regions, made once (autograd registers each primitive for the life of the process).
DEFERRED, UPSTREAM = checkpoint(block), autograd.checkpoint(packed_block)


def state_step(
    arrays: dict[str, np.ndarray], seed: int, x: np.ndarray, rate: float, cotangent: np.ndarray,
    *, checkpoint: bool, variant: str,
) -> StateStep:  # fmt: skip
    """One training step of the block from `arrays`: `np.random.seed(seed mod 2**32)`, the VJP of
    `<y, cotangent>` through the variant's checkpoint (or plain), the update."""
    step = Step(rate, seed, variant == "explicit_seed", arrays["mean"], arrays["var"])
    region = DEFERRED if checkpoint else block
    if checkpoint and variant == "upstream":

        def region(*arrays, step):
            return UPSTREAM(boxed_tuple(arrays), step=step)

    inputs = [np.asarray(arrays[n], np.float32) for n in NAMES[:-1]] + [x]
    # The global generator the default variants draw from; it takes seeds below 2**32.
    np.random.seed(seed % 2**32)  # noqa: NPY002
    before = _fingerprint()
    pullback, y = make_vjp(lambda *args: region(*args, step=step), tuple(range(7)))(*inputs)
    grads = pullback(cotangent)
    if step.slot is not None:
        step.update(*step.slot)
    after = _fingerprint()
    mask, recomputes = drawn(step.masks, rate, y.shape, "the block drew no mask in the step")
    return StateStep(
        y=np.asarray(y, np.float32),
        grads={n: np.asarray(g, np.float32) for n, g in zip(NAMES, grads, strict=True)},
        mask=mask,
        recompute_masks=recomputes,
        running_mean=np.asarray(step.mean, np.float32),
        running_var=np.asarray(step.var, np.float32),
        updates=step.updates,
        rng_before=before,
        rng_after=after,
    )


def _fingerprint() -> bytes:
    """numpy's global generator (its MT19937 key and position), as bytes."""
    _, key, position, *_ = np.random.get_state()  # noqa: NPY002 - its state is what (l.2) reads
    return np.asarray(key).tobytes() + int(position).to_bytes(4, "little")
