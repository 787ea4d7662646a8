"""What every port offering the block with variables and RNGs shares (numpy only).

- `checked(seed, x, features, rate, cotangent)`: what every `state_step` runs first: each
  bad argument gets a one-line error naming it, and x and the cotangent come back as float32
  copies (the caller's arrays are never touched).
- `initial(params)`: the block's starting arrays by canonical name: the first exercise's
  parameters (`Params`, drawn by the port as today), then BatchNorm's scale ones, bias
  zeros, mean zeros and variance ones.
- `drawn(masks, rate, shape, unseen)`: a step's forward mask and recompute masks.
- `OffersStatefulBlock`: the port mixin whose `state_step` runs the stack's `block_step`.
- `redraws(...)`: the declaration of a variant that redraws, moves the RNG and updates twice;
  `updates_twice(...)`, of one that replays the mask and updates twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from .contract import check_features, check_seed, check_sizes
from .stateful import (
    DEFAULT_VARIANT,
    NotObservable,
    StateDeclaration,
    StateDegradation,
    StateStep,
    check_batch,
    check_rate,
)


def checked(seed: Any, x: Any, features: Any, rate: Any, cotangent: Any):
    """`(seed, x, features, rate, cotangent)` checked: x `(B, D)` and the cotangent `(B, F)`
    as float32 numpy copies."""
    seed, features, rate, x = (
        check_seed(seed),
        check_features(features),
        check_rate(rate),
        check_batch(x),
    )
    check_sizes(x.shape[1], features)
    cotangent = np.array(cotangent, dtype=np.float32, copy=True)
    if cotangent.shape != (x.shape[0], features):
        raise ValueError(
            f"cotangent must have shape {(x.shape[0], features)}, got {cotangent.shape}"
        )
    return seed, x, features, rate, cotangent


def initial(params: Any) -> dict[str, np.ndarray]:
    """The block's arrays by canonical name from the first exercise's `params` (w1, b1, w2,
    b2), with Flax's BatchNorm start: gamma ones, beta zeros, mean zeros, var ones."""
    features = np.asarray(params.b1).shape[0]
    ones, zeros = np.ones(features, np.float32), np.zeros(features, np.float32)
    return {
        "w1": np.asarray(params.w1, np.float32), "b1": np.asarray(params.b1, np.float32),
        "gamma": ones, "beta": zeros.copy(), "w2": np.asarray(params.w2, np.float32),
        "b2": np.asarray(params.b2, np.float32), "mean": zeros, "var": ones.copy(),
    }  # fmt: skip


def drawn(masks: list[np.ndarray], rate: float, shape: tuple[int, ...], unseen: str):
    """`(mask, recompute_masks)` as a `StateStep` holds them, from the masks an instrument saw
    in order (the forward's first): at rate 0 nothing is drawn, every element kept; where none
    was seen at a positive rate, both are `NotObservable(unseen)`."""
    if rate == 0.0:
        return np.ones(shape, bool), ()
    if not masks:
        return NotObservable(unseen), NotObservable(unseen)
    return masks[0], tuple(masks[1:])


class OffersStatefulBlock:
    """A port mixin: `state_step` checks its arguments (`checked`), draws the block's arrays
    from the port's own `init_params` (`initial`), and runs the stack's `block_step(arrays,
    seed, x, rate, cotangent, checkpoint=..., variant=...)` for one of `state_variants`."""

    state_variants: ClassVar[Mapping[str, str]] = {}

    def state_step(
        self, seed: Any, x: Any, features: Any, rate: Any, cotangent: Any,
        checkpoint: bool = True, variant: str = DEFAULT_VARIANT,
    ) -> StateStep:  # fmt: skip
        """The second exercise (`implementations.stateful`): one training step of the block
        from `seed`, through the variant's checkpoint (or plain, `checkpoint=False`)."""
        if variant not in self.state_variants:
            raise ValueError(f"variant must be one of {list(self.state_variants)}, got {variant!r}")
        seed, x, features, rate, cotangent = checked(seed, x, features, rate, cotangent)
        arrays = initial(self.init_params(seed, x.shape[1], features))
        return self.block_step(
            arrays, seed, x, rate, cotangent, checkpoint=bool(checkpoint), variant=variant
        )

    def block_step(
        self, arrays: dict[str, np.ndarray], seed: int, x: np.ndarray, rate: float,
        cotangent: np.ndarray, *, checkpoint: bool, variant: str,
    ) -> StateStep:  # fmt: skip
        """The stack's step of the block (a port offering `state_variants` defines it)."""
        raise NotImplementedError(f"port {type(self).__name__} must define block_step")


def updates_twice(
    spelling: str, seeding: str, twice: StateDegradation, **kwargs: Any
) -> StateDeclaration:
    """The declaration of a variant whose recompute replays the mask (the RNG state restored)
    but reruns the statistics' update: 2 updates, `twice` the degradation that counts them."""
    return StateDeclaration(spelling, seeding, updates=2, degradations=(twice,), **kwargs)


def redraws(
    spelling: str, seeding: str, upstream: str, *, replay: str, stream: str,
    updates: str | StateDegradation, **kwargs: Any,
) -> StateDeclaration:  # fmt: skip
    """The declaration of a variant whose recompute draws 1 fresh mask, leaves the RNG a draw
    ahead and updates the statistics twice, each part's `what` given, all with `upstream`
    (the second update may be a `StateDegradation` of its own, with its own reference)."""
    if isinstance(updates, str):
        updates = StateDegradation("updates", 2, upstream, updates)
    return StateDeclaration(
        spelling,
        seeding,
        replay=False,
        stream_kept=False,
        updates=2,
        degradations=(
            StateDegradation("replay", 1, upstream, replay),
            StateDegradation("stream", 1, upstream, stream),
            updates,
        ),
        **kwargs,
    )
