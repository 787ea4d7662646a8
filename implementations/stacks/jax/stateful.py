"""What the JAX fronts share for the block with variables and RNGs (`implementations.stateful`).

- `dropout_key(seed)`: the dropout stream's key, `fold_in(PRNGKey(seed), DROPOUT_FOLD)`.
- `observed_masks()`: the instrument: every `jax.random.bernoulli` draw, as each execution
  makes it (a `jax.debug.callback` on the drawn mask, so a recompute inside `jax.checkpoint`
  reports its own draw). Flax linen, NNX and Equinox draw their dropout masks with it.
- `fingerprint(key)`: a key's words, as bytes.
- `STEP_COMPILE`: the XLA options each front's step is jitted with.
- `make_step(...)`: a `StateStep` from a step's arrays and the observed draws.
- `initial(seed, dim, features)`: the block's parameters and statistics as numpy arrays,
  Flax's init (the first exercise's parameters, then BatchNorm's ones and zeros).
- `StatefulFront`: a front's `state_step`, its variant checked, from its `run_state_step`.

Imports jax and numpy only.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import jax
import numpy as np

from ...stateful import (
    DEFAULT_VARIANT,
    DROPOUT_FOLD,
    NotObservable,
    StateStep,
)
from ...stateful_port import checked as checked  # the step's arguments, shared
from .flax_init import init_arrays

_LOCK = threading.Lock()
#: A JAX front's update count: its state is a value, returned once; (l.3) counts the updates
#: in the statistics themselves.
UPDATES_UNCOUNTED = NotObservable(
    "JAX's state is a value: the step returns the statistics once; (l.3) counts the updates in them"
)
_ORIGINAL_BERNOULLI = jax.random.bernoulli
#: XLA's options for a front's step, which runs inside `observed_masks`: the callback there
#: keeps the program out of JAX's persistent cache (jax/_src/compiler.py writes no entry for
#: a program with host callbacks), so every run compiles it again: LLVM's optimisations are
#: left out of that compile. The step's values are held to the numpy block within its error
#: bounds, never bit for bit, and its masks are integer draws.
STEP_COMPILE = {"xla_backend_optimization_level": 0}


def dropout_key(seed: int) -> jax.Array:
    """The dropout stream of `seed`: `fold_in(PRNGKey(seed), DROPOUT_FOLD)`."""
    return jax.random.fold_in(jax.random.PRNGKey(np.int64(seed)), DROPOUT_FOLD)


def fingerprint(key: jax.Array) -> bytes:
    """A key's words as bytes (a typed key's data, or a raw uint32 key)."""
    data = (
        jax.random.key_data(key) if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    )
    return np.asarray(data).tobytes()


#: Where `_record` puts what it sees: the list of the `observed_masks` context that is open.
_SINK: list[list[np.ndarray]] = []


def _record(mask) -> None:
    # One function for every program: a compiled step, run again from jit's cache, calls the
    # callback it was traced with, which must write to the context open now.
    if _SINK:
        _SINK[-1].append(np.array(mask, dtype=bool))


def _observed_bernoulli(*args, **kwargs):
    mask = _ORIGINAL_BERNOULLI(*args, **kwargs)
    jax.debug.callback(_record, mask, ordered=True)
    return mask


@contextlib.contextmanager
def observed_masks() -> Iterator[list[np.ndarray]]:
    """Every mask `jax.random.bernoulli` draws while the block runs, in execution order: the
    forward's first, then each recompute's. `jax.random.bernoulli` is wrapped while the block
    is traced, so the callback is part of the program each execution runs: a step's compiled
    function must be traced inside this context only (each front's step is)."""
    seen: list[np.ndarray] = []
    with _LOCK:
        jax.random.bernoulli, _ = _observed_bernoulli, _SINK.append(seen)
        try:
            yield seen
            jax.effects_barrier()
        finally:
            jax.random.bernoulli = _ORIGINAL_BERNOULLI
            _SINK.pop()


def initial(seed: int, dim: int, features: int) -> dict[str, np.ndarray]:
    """The block's parameters (the first exercise's, then gamma ones and beta zeros) and its
    statistics (mean zeros, var ones), by canonical name, as Flax linen inits them."""
    w1, b1, w2, b2 = (np.asarray(a) for a in init_arrays(seed, dim, features))
    ones, zeros = np.ones(features, np.float32), np.zeros(features, np.float32)
    return {"w1": w1, "b1": b1, "gamma": ones, "beta": zeros.copy(), "w2": w2, "b2": b2,
            "mean": zeros, "var": ones.copy()}  # fmt: skip


def _state(rng: Any) -> Any:
    # A key becomes its words; a fingerprint already made (NNX's key and counter) stays.
    return rng if isinstance(rng, (NotObservable, bytes, tuple)) else fingerprint(rng)


def make_step(
    y: Any, grads: Mapping[str, Any], masks: list[np.ndarray], mean: Any, var: Any,
    *, rate: float, before: Any, after: Any, counters: Mapping[str, int] | None = None,
    updates: int | NotObservable = UPDATES_UNCOUNTED,
) -> StateStep:  # fmt: skip
    """A `StateStep` from a step's arrays and the masks `observed_masks` saw (none at rate 0:
    the block then draws nothing, and the mask is all kept); `before` and `after`, the RNG
    state, as a key or a fingerprint."""
    y = np.asarray(y, np.float32)
    if rate == 0.0:
        mask, recomputes = np.ones(y.shape, bool), ()
    elif not masks:
        mask = NotObservable("no jax.random.bernoulli draw was seen in the step")
        recomputes = mask
    else:
        mask, recomputes = masks[0], tuple(masks[1:])
    return StateStep(
        y=y,
        grads={k: np.asarray(v, np.float32) for k, v in grads.items()},
        mask=mask,
        recompute_masks=recomputes,
        running_mean=np.asarray(mean, np.float32),
        running_var=np.asarray(var, np.float32),
        counters=dict(counters or {}),
        updates=updates,
        rng_before=_state(before),
        rng_after=_state(after),
    )


class StatefulFront:
    """`state_step` for a JAX front with one API variant: the variant checked, then its own
    `run_state_step(seed, x, features, rate, cotangent, checkpoint)`."""

    state_variants: ClassVar[dict[str, str]] = {}

    def state_step(
        self, seed: Any, x: Any, features: Any, rate: Any, cotangent: Any,
        checkpoint: bool = True, variant: str = DEFAULT_VARIANT,
    ) -> StateStep:  # fmt: skip
        """One training step of the stateful block from `seed` (`implementations.stateful`)."""
        if variant not in self.state_variants:
            raise ValueError(f"variant must be one of {list(self.state_variants)}, got {variant!r}")
        return self.run_state_step(seed, x, features, rate, cotangent, bool(checkpoint))

    def run_state_step(
        self, seed: Any, x: Any, features: Any, rate: Any, cotangent: Any, checkpoint: bool
    ) -> StateStep:
        raise NotImplementedError
