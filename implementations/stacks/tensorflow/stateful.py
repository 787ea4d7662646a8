"""The block with variables and RNGs in TensorFlow ops (`implementations.stateful`, property (l)).

Block = `x @ w1 + b1 -> tf.nn.batch_normalization (batch statistics, tf.nn.moments) -> relu ->
dropout(rate) -> @ w2 + b2`, momentum 0.99 in Flax's convention (the old value kept), the
biased batch variance, epsilon 1e-5. The parameters are arguments of the region, as in the
first exercise's port; the running statistics are non-trainable `tf.Variable`s.

Two API variants, side by side:

- `default`: `tf.recompute_grad(block)` with `tf.nn.dropout` (no op seed) after
  `tf.random.set_seed(seed)`, and the statistics assigned inside the block, as a user
  writes it. The recompute in the backward pass draws a new mask (the op seed comes from the
  global seed's counter, which the forward moved) and assigns the statistics again.
- `stateless`: the fix: `tf.nn.experimental.stateless_dropout(seed=[seed, 1])`, and the
  region returns the batch statistics, assigned outside it: the recompute replays the mask
  and updates nothing.

The instrument is an op callback on the eager step: each dropout's `GreaterEqual` (the kept
mask, right after its random op) and each `AssignVariableOp` on the running mean.
Imports TensorFlow and numpy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
from tensorflow.python.eager import context
from tensorflow.python.framework import op_callbacks

from ...stateful import EPSILON, MOMENTUM, NotObservable, StateStep
from ...stateful_port import drawn
from .runtime import tf

#: The random ops a dropout draws its uniform noise with (stateful, stateless).
_RANDOM_OPS = {"RandomUniform", "StatelessRandomUniformV2"}
#: The op seed of the stateless variant's dropout, beside `seed`.
STATELESS_STREAM = 1


def _op_name(op_type: Any) -> str:
    return op_type.decode() if isinstance(op_type, bytes) else str(op_type)


class _Seen:
    """The op callback: the kept masks in execution order, and the running mean's assigns."""

    def __init__(self, mean: tf.Variable):
        self.masks: list[np.ndarray] = []
        self.updates = 0
        self._mean_handle = mean.handle
        self._after_random = False

    def __call__(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        name = _op_name(op_type)
        if name in _RANDOM_OPS:
            self._after_random = True
        elif name == "GreaterEqual" and self._after_random:
            self.masks.append(np.array(outputs[0], dtype=bool))  # dropout's keep_mask
            self._after_random = False
        elif name == "AssignVariableOp" and inputs[0] is self._mean_handle:
            self.updates += 1

    def drawn(self, rate: float, shape: tuple[int, ...]):
        """`(mask, recompute_masks)` as a `StateStep` holds them: at rate 0 nothing is drawn,
        so every element is kept and nothing is redrawn."""
        return drawn(self.masks, rate, shape, "no dropout mask was seen in the step")


@contextlib.contextmanager
def observed(mean: tf.Variable) -> Iterator[_Seen]:
    """The op callback on while the step runs: its kept masks, and `mean`'s assigns."""
    seen = _Seen(mean)
    op_callbacks.add_op_callback(seen)
    try:
        yield seen
    finally:
        op_callbacks.remove_op_callback(seen)


def rng_fingerprint() -> bytes | NotObservable:
    """TensorFlow's eager op-seed generator (`context._rng`, a `random.Random` that
    `tf.random.set_seed` makes and each unseeded random op draws its op seed from), as bytes."""
    rng = getattr(context.context(), "_rng", None)
    if rng is None:
        return NotObservable("tf.random.set_seed was not called: no op-seed generator exists")
    version, words, gauss = rng.getstate()
    return np.array([version, *words], np.int64).tobytes() + repr(gauss).encode()


def _normalized(h, gamma, beta):
    mean, var = tf.nn.moments(h, axes=[0])  # the batch's mean and biased variance
    return tf.nn.batch_normalization(h, mean, var, beta, gamma, EPSILON), mean, var


def _assign(stats: tuple[tf.Variable, tf.Variable], mean, var) -> None:
    for running, batch in zip(stats, (mean, var), strict=True):
        running.assign(MOMENTUM * running + (1.0 - MOMENTUM) * batch)


def default_block(stats, rate: float):
    """The block as a user writes it: `tf.nn.dropout`, the statistics assigned inside."""

    def block(x, w1, b1, gamma, beta, w2, b2):
        z, mean, var = _normalized(x @ w1 + b1, gamma, beta)
        _assign(stats, mean, var)
        return tf.nn.dropout(tf.nn.relu(z), rate=rate) @ w2 + b2  # rate 0: x itself, no draw

    return block


def stateless_block(seed: int, rate: float):
    """The fix: a pure block, `stateless_dropout` on an explicit seed, statistics returned."""

    def block(x, w1, b1, gamma, beta, w2, b2):
        z, mean, var = _normalized(x @ w1 + b1, gamma, beta)
        a = tf.nn.relu(z)
        if rate:
            a = tf.nn.experimental.stateless_dropout(a, rate, seed=[seed, STATELESS_STREAM])
        return a @ w2 + b2, mean, var

    return block


def state_step(
    arrays: dict[str, np.ndarray], seed: int, x: np.ndarray, rate: float, cotangent: np.ndarray,
    *, checkpoint: bool, variant: str,
) -> StateStep:  # fmt: skip
    """One training step of the block from `arrays` (`stateful_port.initial`), eagerly:
    `tf.random.set_seed(seed)`, the forward, the VJP of `<y, cotangent>`, the update."""
    names = ("w1", "b1", "gamma", "beta", "w2", "b2")
    params = [tf.constant(arrays[n]) for n in names]
    stats = (
        tf.Variable(arrays["mean"], trainable=False),
        tf.Variable(arrays["var"], trainable=False),
    )
    xt, g = tf.constant(x), tf.constant(cotangent)
    tf.random.set_seed(seed)
    before = rng_fingerprint()
    with observed(stats[0]) as seen:
        with tf.GradientTape() as tape:
            tape.watch([xt, *params])
            if variant == "stateless":
                region = stateless_block(seed, rate)
                y, mean, var = (tf.recompute_grad(region) if checkpoint else region)(xt, *params)
                _assign(stats, mean, var)  # outside the region: the recompute cannot repeat it
            else:
                region = default_block(stats, rate)
                y = (tf.recompute_grad(region) if checkpoint else region)(xt, *params)
        grads = tape.gradient(y, [*params, xt], output_gradients=g)
    after = rng_fingerprint()
    mask, recomputes = seen.drawn(rate, tuple(y.shape))
    return StateStep(
        y=y.numpy(),
        grads={n: t.numpy() for n, t in zip((*names, "x"), grads, strict=True)},
        mask=mask,
        recompute_masks=recomputes,
        running_mean=stats[0].numpy(),
        running_var=stats[1].numpy(),
        updates=seen.updates,
        rng_before=before,
        rng_after=after,
    )
