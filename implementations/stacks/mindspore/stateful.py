"""The block with variables and RNGs in MindSpore (`implementations.stateful`, property (l)).

Block = `Affine(D, F) -> batch norm -> relu -> nn.Dropout(rate) -> Affine(F, F)`,
PyNative, CPU. The batch norm is written with ops (the batch's mean and biased variance,
epsilon 1e-5, running statistics at momentum 0.99 in Flax's convention, assigned with
`ops.assign`): `nn.BatchNorm1d` fails on NumPy 2 in this venv ("compiled using NumPy 1.x").
`nn.Dropout` draws with an `ops.Dropout` primitive whose seeds come from
`ms.set_seed(seed mod 2**32)` when it is made, and which keeps its own draw count.

Three API variants, side by side:

- `default`: `Cell.recompute()` on the block: the recompute replays the mask, but assigns
  the running statistics again.
- `function`: `mindspore.recompute(block, x)`: a fresh mask in the recompute too.
- `stats_outside`: the fix: `Cell.recompute()`, the batch statistics written to a slot the
  step applies once.

The instrument is the block's own: each mask `ops.Dropout` returns and each assignment of
the statistics, as they run (the recompute runs `construct` again); the stream is the mask
the block's dropout draws next, after the step. Imports mindspore and numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...stateful import EPSILON, MOMENTUM, StateStep
from ...stateful_port import drawn
from .loaded import ms
from .mlp import Affine

nn, ops = ms.nn, ms.ops
#: `ms.set_seed` takes seeds below 2**32.
SEED_RANGE = 2**32


class Block(nn.Cell):
    """The block holding the given arrays; it records its masks and updates."""

    def __init__(self, arrays: dict[str, np.ndarray], rate: float, stats_outside: bool):
        super().__init__()
        self.linear_0 = Affine(arrays["w1"], arrays["b1"])
        self.linear_1 = Affine(arrays["w2"], arrays["b2"])
        self.gamma = ms.Parameter(ms.Tensor(arrays["gamma"]), name="gamma")
        self.beta = ms.Parameter(ms.Tensor(arrays["beta"]), name="beta")
        self.mean = ms.Parameter(ms.Tensor(arrays["mean"]), name="mean", requires_grad=False)
        self.var = ms.Parameter(ms.Tensor(arrays["var"]), name="var", requires_grad=False)
        self.rate, self.stats_outside = rate, stats_outside
        # nn.Dropout's own primitive, seeded as nn.Dropout seeds it (from the global seed);
        # called here directly, as nn.Dropout's construct does, to keep the mask it returns.
        self.dropout = nn.Dropout(p=rate).dropout if rate else None
        self.masks: list[Any] = []
        self.updates = 0
        self.slot: tuple[Any, Any] | None = None

    def construct(self, x):
        h = self.linear_0(x)
        mean = h.mean(0)
        c = h - mean
        var = (c * c).mean(0)
        if self.stats_outside:
            self.slot = (mean, var)  # a recompute writes the same values
        else:
            self.update(mean, var)
        a = ops.relu(c / ops.sqrt(var + EPSILON) * self.gamma + self.beta)
        if self.dropout is not None:
            a, mask = self.dropout(a)
            self.masks.append(mask)
        return self.linear_1(a)

    def update(self, mean, var) -> None:
        ops.assign(self.mean, MOMENTUM * self.mean + (1.0 - MOMENTUM) * ops.stop_gradient(mean))
        ops.assign(self.var, MOMENTUM * self.var + (1.0 - MOMENTUM) * ops.stop_gradient(var))
        self.updates += 1

    def params(self) -> dict[str, Any]:
        return {
            "w1": self.linear_0.weight, "b1": self.linear_0.bias, "gamma": self.gamma,
            "beta": self.beta, "w2": self.linear_1.weight, "b2": self.linear_1.bias,
        }  # fmt: skip


def state_step(
    arrays: dict[str, np.ndarray], seed: int, x: np.ndarray, rate: float, cotangent: np.ndarray,
    *, checkpoint: bool, variant: str,
) -> StateStep:  # fmt: skip
    """One training step of the block from `arrays`: `ms.set_seed(seed mod 2**32)`, the block
    made, the VJP of `<y, cotangent>` through the variant's recompute (or plain), the update."""
    ms.set_seed(seed % SEED_RANGE)
    block = Block(arrays, rate, stats_outside=variant == "stats_outside")
    block.set_train(True)
    if checkpoint and variant != "function":
        block.recompute()
    run = (lambda x: ms.recompute(block, x)) if checkpoint and variant == "function" else block
    g = ms.Tensor(cotangent)

    def loss(x):
        y = run(x)
        return (y * g).sum(), y

    params = block.params()
    grad = ms.value_and_grad(loss, 0, list(params.values()), has_aux=True)
    (_, y), (gx, grads) = grad(ms.Tensor(x))
    if block.slot is not None:
        block.update(*block.slot)
    masks = [np.asarray(m.asnumpy(), bool) for m in block.masks]
    mask, recomputes = drawn(masks, rate, tuple(y.shape), "no ops.Dropout mask was seen")
    return StateStep(
        y=y.asnumpy(),
        grads={**{n: t.asnumpy() for n, t in zip(params, grads, strict=True)}, "x": gx.asnumpy()},
        mask=mask,
        recompute_masks=recomputes,
        running_mean=block.mean.asnumpy(),
        running_var=block.var.asnumpy(),
        updates=block.updates,
        rng_before=(seed % SEED_RANGE,),
        rng_after=_next_mask(block),
    )


def _next_mask(block: Block) -> bytes | tuple[int, ...]:
    """The mask the block's dropout draws next, as bytes (the op's own state, read by a draw
    once the step is over); at rate 0 there is no dropout op: empty."""
    if block.dropout is None:
        return ()
    _, mask = block.dropout(ops.ones((8, 8), ms.float32))
    return np.asarray(mask.asnumpy(), bool).tobytes()
