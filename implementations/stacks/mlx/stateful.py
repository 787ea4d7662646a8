"""The block with variables and RNGs in MLX (`implementations.stateful`, property (l)), CPU.

Block = `Linear(D, F) -> BatchNorm(F, momentum=0.01) -> relu -> Dropout(rate) -> Linear(F, F)`.
MLX's momentum is torch's convention (the share of the batch taken): 0.01 is the canonical
0.99; as torch, its running variance takes the unbiased batch variance (`ddof=1`); epsilon
1e-5. The parameters are the first exercise's (the numpy init), weights `(out, in)`.

Two API variants, side by side:

- `default`: `nn.utils.checkpoint(block)` over `nn.Dropout` and `nn.BatchNorm`, after
  `mx.random.seed(seed)`, as a user writes it. The checkpoint calls the module again in the
  backward pass: Dropout draws its next mask from the global key, and BatchNorm updates its
  running statistics again.
- `explicit_key`: the fix: dropout from `mx.random.bernoulli(..., key=mx.random.key(seed))`
  and the batch statistics returned by the region, the running ones updated outside it, once.

The instrument: every `mx.random.bernoulli` draw as it runs (the recompute's too), the
running mean's assignments counted, and the global key read before and after the step.
Imports mlx and numpy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from ...stateful import MOMENTUM, StateStep
from ...stateful_port import drawn

#: MLX's momentum, torch's convention: the share of the batch taken.
TAKEN = 1.0 - MOMENTUM
_BERNOULLI = mx.random.bernoulli


class CountedBatchNorm(nn.BatchNorm):
    """`nn.BatchNorm` that counts each assignment of its running mean (one per update)."""

    def __init__(self, features: int):
        super().__init__(features, momentum=TAKEN)
        self.updates = 0

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "running_mean" and "running_mean" in self:
            super().__setattr__("updates", getattr(self, "updates", 0) + 1)
        super().__setattr__(name, value)


class ExplicitKeyBlock(nn.Module):
    """The fix: dropout on an explicit key and the batch statistics returned, not assigned."""

    def __init__(self, layers: list, rate: float, key: mx.array):
        super().__init__()
        self.layers, self.rate, self.key = layers, rate, key
        self.freeze(keys=["key"], strict=False)

    def __call__(self, x: mx.array):
        linear_0, norm, _, _, linear_1 = self.layers
        h = linear_0(x)
        mean, var = mx.mean(h, axis=0), mx.var(h, axis=0)
        a = nn.relu((h - mean) * mx.rsqrt(var + norm.eps) * norm.weight + norm.bias)
        if self.rate:
            kept = mx.random.bernoulli(1.0 - self.rate, a.shape, key=self.key)
            a = mx.where(kept, a / (1.0 - self.rate), 0.0)
        return linear_1(a), mean, mx.var(h, axis=0, ddof=1)  # the running var's, as BatchNorm's


def build(arrays: dict[str, np.ndarray], rate: float) -> nn.Sequential:
    """The block holding `arrays` (`stateful_port.initial`)."""
    norm = CountedBatchNorm(arrays["b1"].shape[0])
    norm.update({"weight": mx.array(arrays["gamma"]), "bias": mx.array(arrays["beta"])})
    norm.running_mean, norm.running_var = mx.array(arrays["mean"]), mx.array(arrays["var"])
    norm.updates = 0
    return nn.Sequential(
        _linear(arrays["w1"], arrays["b1"]), norm, nn.ReLU(), nn.Dropout(rate),
        _linear(arrays["w2"], arrays["b2"]),
    )  # fmt: skip


def _linear(kernel: np.ndarray, bias: np.ndarray) -> nn.Linear:
    """An `nn.Linear` holding a canonical `(in, out)` kernel as its `(out, in)` weight. Its own
    init draws from the global key: `state_step` seeds the key after building the block."""
    linear = nn.Linear(*kernel.shape)
    linear.update({"weight": mx.array(kernel.T), "bias": mx.array(bias)})
    return linear


@contextlib.contextmanager
def observed_draws() -> Iterator[list[mx.array]]:
    """Every `mx.random.bernoulli` draw while the step runs, in order, unevaluated."""
    draws: list[mx.array] = []

    def bernoulli(*args, **kwargs):
        drawn = _BERNOULLI(*args, **kwargs)
        draws.append(drawn)
        return drawn

    mx.random.bernoulli = bernoulli
    try:
        yield draws
    finally:
        mx.random.bernoulli = _BERNOULLI


def _key() -> bytes:
    return np.array(mx.random.state[0]).tobytes()


def state_step(
    arrays: dict[str, np.ndarray], seed: int, x: np.ndarray, rate: float, cotangent: np.ndarray,
    *, checkpoint: bool, variant: str,
) -> StateStep:  # fmt: skip
    """One training step of the block from `arrays`: the global key seeded from `seed`, the
    VJP of `<y, cotangent>` through `nn.utils.checkpoint` (or plain), the update."""
    block = build(arrays, rate)
    norm = block.layers[1]
    mx.random.seed(seed)
    if variant == "explicit_key":
        module = ExplicitKeyBlock(block.layers, rate, mx.random.key(seed))
    else:
        module = block
    region = nn.utils.checkpoint(module) if checkpoint else module
    g = mx.array(cotangent)

    def loss(params, x):
        module.update(params)
        out = region(x)
        y = out[0] if isinstance(out, tuple) else out
        return (y * g).sum(), out

    before = _key()
    with observed_draws() as draws:
        (_, out), (grads, gx) = mx.value_and_grad(loss, argnums=(0, 1))(
            module.trainable_parameters(), mx.array(x)
        )
        if variant == "explicit_key":  # the fix's update, outside the region, once
            _, mean, var = out
            norm.running_mean = (1 - TAKEN) * norm.running_mean + TAKEN * mean
            norm.running_var = (1 - TAKEN) * norm.running_var + TAKEN * var
        y = out[0] if isinstance(out, tuple) else out
        mx.eval(y, grads, gx, norm.running_mean, norm.running_var, draws)
    layers = grads["layers"]
    found = {
        "w1": layers[0]["weight"].T, "b1": layers[0]["bias"], "gamma": layers[1]["weight"],
        "beta": layers[1]["bias"], "w2": layers[4]["weight"].T, "b2": layers[4]["bias"], "x": gx,
    }  # fmt: skip
    masks = [np.array(d, dtype=bool) for d in draws]
    mask, recomputes = drawn(masks, rate, tuple(y.shape), "no mx.random.bernoulli draw was seen")
    return StateStep(
        y=np.array(y),
        grads={k: np.array(v) for k, v in found.items()},
        mask=mask,
        recompute_masks=recomputes,
        running_mean=np.array(norm.running_mean),
        running_var=np.array(norm.running_var),
        updates=norm.updates,
        rng_before=before,
        rng_after=_key(),
    )
