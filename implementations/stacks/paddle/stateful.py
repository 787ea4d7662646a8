"""The block with variables and RNGs in Paddle (`implementations.stateful`, property (l)).

Block = `Linear(D, F) -> BatchNorm1D(F, momentum=0.99, epsilon=1e-5) -> relu -> Dropout(rate)
-> Linear(F, F)`, dygraph, CPU. Paddle's momentum is Flax's convention (the old value kept)
and its running variance takes the biased batch variance: the canonical as it is. Linear
weights are `(in, out)`, the canonical layout. Dropout draws from Paddle's CPU generator,
seeded by `paddle.seed(seed)`.

Three API variants, side by side:

- `default`: `fleet.utils.recompute(block, x)`, `preserve_rng_state=True` (its default): the
  recompute restores the generator and replays the mask, but runs BatchNorm again in
  training mode: a second update of the running statistics.
- `no_preserve`: `recompute(..., preserve_rng_state=False)`: a fresh mask too, and the
  generator a draw ahead.
- `stats_outside`: the fix: the region normalizes by the batch statistics and returns them
  to a slot; the step updates the running ones once, outside.

The instrument: each dropout's mask as `_C_ops.dropout` draws it (the recompute's too),
BatchNorm's training forwards counted (each updates the statistics), and the CPU
generator's state read before and after the step. Imports paddle and numpy.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterator

import numpy as np

from ...stateful import EPSILON, MOMENTUM, StateStep
from ...stateful_port import drawn
from .loaded import paddle  # the stack's guarded import, first

_C_ops = paddle._C_ops
_DROPOUT = _C_ops.dropout
recompute = paddle.distributed.fleet.utils.recompute


class Block(paddle.nn.Layer):
    """The block holding the given arrays; `stats_outside` for the fix."""

    def __init__(self, arrays: dict[str, np.ndarray], rate: float, stats_outside: bool):
        super().__init__()
        dim, features = arrays["w1"].shape
        self.linear_0 = paddle.nn.Linear(dim, features)
        self.norm = paddle.nn.BatchNorm1D(features, momentum=MOMENTUM, epsilon=EPSILON)
        self.drop = paddle.nn.Dropout(rate)
        self.linear_1 = paddle.nn.Linear(features, features)
        for tensor, name in (
            (self.linear_0.weight, "w1"), (self.linear_0.bias, "b1"),
            (self.norm.weight, "gamma"), (self.norm.bias, "beta"),
            (self.norm._mean, "mean"), (self.norm._variance, "var"),
            (self.linear_1.weight, "w2"), (self.linear_1.bias, "b2"),
        ):  # fmt: skip
            tensor.set_value(arrays[name])
        self.stats_outside = stats_outside
        self.slot: tuple[paddle.Tensor, paddle.Tensor] | None = None
        self.updates = 0
        self.norm.register_forward_pre_hook(self._count)

    def _count(self, layer, inputs) -> None:
        self.updates += int(layer.training)  # a training forward updates the statistics

    def forward(self, x: paddle.Tensor) -> paddle.Tensor:
        h = self.linear_0(x)
        if self.stats_outside:
            mean = h.mean(axis=0)
            var = ((h - mean) ** 2).mean(axis=0)
            self.slot = (mean.detach(), var.detach())  # a recompute writes the same values
            z = (h - mean) / paddle.sqrt(var + EPSILON) * self.norm.weight + self.norm.bias
        else:
            z = self.norm(h)
        return self.linear_1(self.drop(paddle.nn.functional.relu(z)))

    def update_outside(self) -> None:
        """The fix's one update of the running statistics, from the slot."""
        for running, batch in zip((self.norm._mean, self.norm._variance), self.slot, strict=True):
            running.set_value(MOMENTUM * running + (1.0 - MOMENTUM) * batch)
        self.updates += 1


@contextlib.contextmanager
def observed_masks() -> Iterator[list[np.ndarray]]:
    """Every mask `_C_ops.dropout` draws while the step runs, in order, as kept booleans.

    `_C_ops.dropout` returns the output only, and a dropped element cannot be told from a
    relu zero in it; so each call is run again on ones from the generator state it started
    from (the same draw, the same mask), and the generator is put back where the call left it.
    """
    masks: list[np.ndarray] = []
    generator = paddle.framework.core.default_cpu_generator()

    def dropout(x, *args, **kwargs):
        start = generator.get_state()
        out = _DROPOUT(x, *args, **kwargs)
        end = generator.get_state()
        generator.set_state(start)
        with paddle.no_grad():
            masks.append(_DROPOUT(paddle.ones_like(x), *args, **kwargs).numpy() != 0)
        generator.set_state(end)
        return out

    _C_ops.dropout = dropout
    try:
        yield masks
    finally:
        _C_ops.dropout = _DROPOUT


def _generator() -> bytes:
    """Paddle's CPU generator's state, as its pickle."""
    return pickle.dumps(paddle.framework.core.default_cpu_generator().get_state())


def state_step(
    arrays: dict[str, np.ndarray], seed: int, x: np.ndarray, rate: float, cotangent: np.ndarray,
    *, checkpoint: bool, variant: str,
) -> StateStep:  # fmt: skip
    """One training step of the block from `arrays`: `paddle.seed(seed)`, the VJP of
    `<y, cotangent>` through `recompute` (or plain), the update."""
    block = Block(arrays, rate, stats_outside=variant == "stats_outside")
    block.train()
    xt = paddle.to_tensor(x)
    xt.stop_gradient = False  # as a block inside a network sees its input: recompute runs
    paddle.seed(seed)
    before = _generator()
    with observed_masks() as masks:
        if checkpoint:
            y = recompute(block, xt, preserve_rng_state=variant != "no_preserve")
        else:
            y = block(xt)
        (y * paddle.to_tensor(cotangent)).sum().backward()
    if block.stats_outside:
        block.update_outside()
    after = _generator()
    params = {
        "w1": block.linear_0.weight, "b1": block.linear_0.bias, "gamma": block.norm.weight,
        "beta": block.norm.bias, "w2": block.linear_1.weight, "b2": block.linear_1.bias,
    }  # fmt: skip
    grads = {n: t.grad.numpy() for n, t in params.items()}
    mask, recomputes = drawn(masks, rate, tuple(y.shape), "no _C_ops.dropout call was seen")
    return StateStep(
        y=y.numpy(),
        grads={**grads, "x": xt.grad.numpy()},
        mask=mask,
        recompute_masks=recomputes,
        running_mean=block.norm._mean.numpy(),
        running_var=block.norm._variance.numpy(),
        updates=block.updates,
        rng_before=before,
        rng_after=after,
    )
