"""The second exercise's contract: a block with variables and RNGs under recompute. Numpy only.

**The block** (canonical in Flax linen, `implementations.stacks.jax.flax_stateful`):
`nn.checkpoint(Block)`, Block = `Dense(F) -> BatchNorm(use_running_average=False) -> relu ->
Dropout(rate) -> Dense(F)` on a batch `x` of shape `(B, D)`, `B >= 2`. BatchNorm as Flax's
defaults: `momentum = 0.99` (the share of the old running value kept), `epsilon = 1e-5`,
scale (`gamma`) ones, bias (`beta`) zeros, running mean zeros and variance ones; the
running variance takes the biased batch variance. Dropout keeps an element with probability
`1 - rate` and scales it by `1 / (1 - rate)`.

**Seeding.** The parameters are the first exercise's, bit for bit (`Dense_0` and `Dense_1`
draw `w1, b1, w2, b2` from `PRNGKey(seed)`: Flax names its rng streams by module path, so
BatchNorm and Dropout shift nothing). JAX's dropout key is
`jax.random.fold_in(PRNGKey(seed), DROPOUT_FOLD)`, for init and apply alike. Another
framework seeds its own generator from `seed` as it says (`StateDeclaration.seeding`): the
suite never needs the same mask across frameworks, only the mask the port itself drew.

**The step** a port offers when it declares the variant (`state_variants`):
`state_step(seed, x, features, rate, cotangent, checkpoint, variant) -> StateStep`, one
training step (forward, VJP of `<y, cotangent>`, the state update) from the RNG state
`seed` sets. Everything in a `StateStep` is plain arrays and ints (`to_wire`), so a process
port can send it. What an instrument cannot see is `NotObservable(reason)`, never a guess.

**The declaration** a port's stack writes (its `expectations.py`, `Expectations.stateful`:
port -> variant -> `StateDeclaration`): how it seeds, whether its recompute replays the mask,
whether the checkpoint keeps the RNG stream, how many state updates one step makes, its
momentum convention and its running variance's, and each known degradation as a count model
with its upstream reference (`StateDegradation`). Property (l) holds a port to it: a
declared degradation is measured to its count, never excused in words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: The block's parameters by canonical name, in order: Dense_0, BatchNorm_0, Dense_1.
STATE_PARAM_NAMES = ("w1", "b1", "gamma", "beta", "w2", "b2")
#: What a step's VJP returns: the parameters' gradients and x's.
STATE_GRAD_NAMES = (*STATE_PARAM_NAMES, "x")
#: BatchNorm's epsilon (Flax's and torch's default; Keras's 1e-3 must be set to it).
EPSILON = 1e-5
#: The canonical momentum, in Flax's convention: the share of the old running value kept.
MOMENTUM = 0.99
#: JAX's dropout key: `fold_in(PRNGKey(seed), DROPOUT_FOLD)` (the params key is `PRNGKey(seed)`).
DROPOUT_FOLD = 1
#: The variant a port with one way to checkpoint declares.
DEFAULT_VARIANT = "default"
#: Momentum conventions: "keep" (Flax: new = m * old + (1 - m) * batch) and "new" (torch:
#: new = (1 - m) * old + m * batch).
CONVENTIONS = ("keep", "new")
#: The running variance's estimator: "biased" (Flax: the batch's mean square deviation) or
#: "unbiased" (torch: times B / (B - 1)).
VARIANCES = ("biased", "unbiased")
#: The parts of (l) a degradation can concern.
PARTS = ("replay", "stream", "updates")


@dataclass(frozen=True)
class NotObservable:
    """What an instrument cannot see, and why (reported as "not observable: <reason>")."""

    reason: str

    def __str__(self) -> str:
        return f"not observable: {self.reason}"


#: A framework's RNG state as a fingerprint: its bytes, or its ints (a key's words, a seed
#: and an offset); compared for equality only.
Fingerprint = bytes | tuple[int, ...]


@dataclass(frozen=True)
class StateStep:
    """One training step of the block, as the port ran and its instrument saw it.

    - `y`: the output, `(B, F)` float32.
    - `grads`: the VJP of `<y, cotangent>`, by `STATE_GRAD_NAMES` (canonical layouts).
    - `mask`: the kept mask the forward drew, `(B, F)` bool, observed on this very call (at
      rate 0, where nothing is drawn, `NotObservable` reads as every element kept).
    - `recompute_masks`: the mask each recompute drew, in order (`()` where nothing reran).
    - `running_mean`, `running_var`: BatchNorm's statistics after the step, `(F,)`.
    - `counters`: counters the framework keeps (`num_batches_tracked`), name -> value.
    - `updates`: the state updates the instrument counted in the step.
    - `rng_before`, `rng_after`: the framework's RNG state before and after the step.
    """

    y: np.ndarray
    grads: Mapping[str, np.ndarray]
    mask: np.ndarray | NotObservable
    recompute_masks: tuple[np.ndarray, ...] | NotObservable
    running_mean: np.ndarray
    running_var: np.ndarray
    counters: Mapping[str, int] = field(default_factory=dict)
    updates: int | NotObservable = NotObservable("not counted")
    rng_before: Fingerprint | NotObservable = NotObservable("not read")
    rng_after: Fingerprint | NotObservable = NotObservable("not read")

    def __post_init__(self):
        missing = [n for n in STATE_GRAD_NAMES if n not in self.grads]
        if missing:
            raise ValueError(f"grads must hold {STATE_GRAD_NAMES}, missing {missing}")
        if not isinstance(self.recompute_masks, (tuple, NotObservable)):
            raise TypeError("recompute_masks must be a tuple of masks or NotObservable")
        for name in ("rng_before", "rng_after"):
            value = getattr(self, name)
            if not isinstance(value, (bytes, tuple, NotObservable)):
                raise TypeError(f"{name} must be bytes, a tuple of ints or NotObservable")

    def to_wire(self) -> dict[str, Any]:
        """As plain data (lists, ints, strings): a `NotObservable` is `{"not_observable":
        reason}`, a fingerprint a list of ints."""
        return {
            "y": _wire(self.y),
            "grads": {k: _wire(v) for k, v in self.grads.items()},
            "mask": _wire(self.mask),
            "recompute_masks": _wire(self.recompute_masks),
            "running_mean": _wire(self.running_mean),
            "running_var": _wire(self.running_var),
            "counters": {k: int(v) for k, v in self.counters.items()},
            "updates": _wire(self.updates),
            "rng_before": _wire(self.rng_before),
            "rng_after": _wire(self.rng_after),
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> StateStep:
        """The step `to_wire` wrote (a process port's reply)."""

        def array(value, dtype=np.float32):
            return _unwire(value) if _unseen(value) else np.asarray(value, dtype)

        def masks(value):
            return _unwire(value) if _unseen(value) else tuple(array(m, bool) for m in value)

        def fingerprint(value):
            return _unwire(value) if _unseen(value) else tuple(int(v) for v in value)

        return cls(
            y=array(data["y"]),
            grads={k: array(v) for k, v in data["grads"].items()},
            mask=array(data["mask"], bool),
            recompute_masks=masks(data["recompute_masks"]),
            running_mean=array(data["running_mean"]),
            running_var=array(data["running_var"]),
            counters={k: int(v) for k, v in data.get("counters", {}).items()},
            updates=_unwire(data["updates"]) if _unseen(data["updates"]) else int(data["updates"]),
            rng_before=fingerprint(data["rng_before"]),
            rng_after=fingerprint(data["rng_after"]),
        )


def _unseen(value: Any) -> bool:
    return isinstance(value, Mapping) and "not_observable" in value


def _unwire(value: Mapping[str, Any]) -> NotObservable:
    return NotObservable(str(value["not_observable"]))


def _wire(value: Any) -> Any:
    if isinstance(value, NotObservable):
        return {"not_observable": value.reason}
    if isinstance(value, bytes):
        return list(value)
    if isinstance(value, tuple):
        return [_wire(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return int(value) if isinstance(value, (int, np.integer)) else value


@dataclass(frozen=True)
class Momentum:
    """A framework's momentum as it spells it: `convention` "keep" (Flax, Keras: the share of
    the old value kept) or "new" (torch: the share of the batch's taken), and its `value`."""

    convention: str
    value: float

    def __post_init__(self):
        if self.convention not in CONVENTIONS:
            raise ValueError(f"convention must be one of {CONVENTIONS}, got {self.convention!r}")
        if not 0.0 <= self.value <= 1.0:
            raise ValueError(f"momentum value must be in [0, 1], got {self.value!r}")

    @property
    def kept(self) -> float:
        """The share of the old running value kept, Flax's convention."""
        return self.value if self.convention == "keep" else 1.0 - self.value


#: The canonical's momentum: Flax's 0.99, the old value kept (torch spells it `Momentum("new",
#: 0.01)`; torch's default 0.1 is another momentum, `Momentum("keep", 0.9)`).
CANONICAL_MOMENTUM = Momentum("keep", MOMENTUM)


@dataclass(frozen=True)
class StateDegradation:
    """A known upstream degradation of one part of (l), as the count it shows.

    - `part`: "replay" (the recompute draws a fresh mask: `count` fresh masks, and the VJP
      is the one of the recompute's mask), "stream" (the checkpoint moves the RNG state:
      `count` is how many steps' states differ, 1), or "updates" (the state is updated
      `count` times in one step).
    - `count`: the number it is held to.
    - `upstream`: the upstream reference (`"pytorch#96136"`).
    - `what`: one line for reports.
    """

    part: str
    count: int
    upstream: str
    what: str

    def __post_init__(self):
        if self.part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {self.part!r}")
        if not self.upstream:
            raise ValueError("a degradation names its upstream reference")


@dataclass(frozen=True)
class StateDeclaration:
    """What one port does, under one API variant, with the block's RNG and state.

    - `spelling`: the native call (`"nn.checkpoint(Block)"`).
    - `seeding`: how its dropout is seeded from `seed`, in words.
    - `replay`: its recompute draws the forward's mask again.
    - `stream_kept`: the RNG state after a step is the same with the checkpoint on and off.
    - `updates`: the state updates one step makes (1, or 2 where the recompute updates too).
    - `momentum`: its momentum as it spells it (held to `CANONICAL_MOMENTUM` once converted).
    - `running_var`: "biased" or "unbiased" (`VARIANCES`).
    - `var_start`: the running variance's value before the first update (Flax's and torch's
      1; a zero-started moving average's 0, Haiku's and Equinox's hidden state).
    - `counters`: the counters its step reports, each equal to `updates`.
    - `degradations`: each departure from the canonical (replay False, stream_kept False,
      updates 2) as its count with its upstream reference; one per departure, no more.
    - `fix`: the variant (`port:variant`) that does it right, where one exists.
    - `repro`: the repository path of the standalone script that shows the degradation.
    """

    spelling: str
    seeding: str
    replay: bool = True
    stream_kept: bool = True
    updates: int = 1
    momentum: Momentum = CANONICAL_MOMENTUM
    running_var: str = "biased"
    var_start: float = 1.0
    counters: tuple[str, ...] = ()
    degradations: tuple[StateDegradation, ...] = ()
    fix: str = ""
    repro: str = ""

    def __post_init__(self):
        if self.updates not in (1, 2):
            raise ValueError(f"updates must be 1 or 2, got {self.updates!r}")
        if self.running_var not in VARIANCES:
            raise ValueError(f"running_var must be one of {VARIANCES}, got {self.running_var!r}")
        problems = declaration_problems(self)
        if problems:
            raise ValueError(f"declaration {self.spelling!r}: {'; '.join(problems)}")

    def to_wire(self) -> dict[str, Any]:
        """As plain data (a process port's hello carries it): its fields, the momentum and
        each degradation as objects of theirs."""
        return {
            **{k: getattr(self, k) for k in ("spelling", "seeding", "replay", "stream_kept",
                                               "updates", "running_var", "var_start", "fix",
                                               "repro")},
            "momentum": {"convention": self.momentum.convention, "value": self.momentum.value},
            "counters": list(self.counters),
            "degradations": [vars(d).copy() for d in self.degradations],
        }  # fmt: skip

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> StateDeclaration:
        """The declaration `to_wire` wrote; a missing field takes its default, a bad one raises
        `ValueError` (`TypeError` for an unknown field) naming it."""
        fields = dict(data)
        if "momentum" in fields:
            fields["momentum"] = Momentum(**fields["momentum"])
        fields["counters"] = tuple(fields.get("counters", ()))
        fields["degradations"] = tuple(
            StateDegradation(**d) for d in fields.get("degradations", ())
        )
        return cls(**fields)

    def degradation(self, part: str) -> StateDegradation | None:
        """The declared degradation of `part`, or None."""
        return next((d for d in self.degradations if d.part == part), None)


def declaration_problems(declaration: StateDeclaration) -> list[str]:
    """Where `declaration`'s departures and its degradations disagree, one line each."""
    problems = []
    departs = {
        "replay": not declaration.replay,
        "stream": not declaration.stream_kept,
        "updates": declaration.updates != 1,
    }
    parts = [d.part for d in declaration.degradations]
    for part, departed in departs.items():
        if departed and part not in parts:
            problems.append(f"{part} departs from the canonical with no degradation declared")
        if not departed and part in parts:
            problems.append(f"a degradation of {part} is declared, but {part} does not depart")
        if parts.count(part) > 1:
            problems.append(f"{part} has {parts.count(part)} degradations declared")
    updates = declaration.degradation("updates")
    if updates is not None and updates.count != declaration.updates:
        problems.append(f"updates {declaration.updates}, its degradation counts {updates.count}")
    return problems


def check_rate(rate: Any) -> float:
    """`rate` as a float in `[0, 1)`; raise naming `rate` otherwise."""
    if isinstance(rate, (bool, np.bool_)) or not isinstance(rate, (int, float, np.number)):
        raise ValueError(f"rate must be a real number in [0, 1), got {rate!r}")
    value = float(rate)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"rate must be in [0, 1), got {value!r}")
    return value


def check_batch(x: Any) -> np.ndarray:
    """`x` as a float32 `(B, D)` numpy array, `B >= 2`, finite (a copy: the caller's array is
    never touched); raise naming `x` otherwise."""
    array = np.array(x, dtype=np.float32, copy=True)
    if array.ndim != 2 or array.shape[0] < 2 or array.shape[1] < 1:
        raise ValueError(f"x must have shape (B, D) with B >= 2, D >= 1, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("x must be finite")
    return array


def variants(port: Any) -> Mapping[str, str]:
    """The variants `port` declares for the block: variant -> native spelling ({}: none)."""
    found = getattr(port, "state_variants", None)
    return dict(found) if isinstance(found, Mapping) else {}


def not_stateful(port: Any) -> str:
    """Why `port` does not offer the block (its `not_stateful`), or "not declared"."""
    reason = getattr(port, "not_stateful", "")
    return reason if isinstance(reason, str) and reason else "not declared"
