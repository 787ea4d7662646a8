"""(l) The block with variables and RNGs under recompute (`implementations.stateful`): one
training step of Dense -> BatchNorm -> relu -> Dropout -> Dense, checkpoint on and off, from
the same RNG state. Four parts, each able to fail alone:

- (l.1) replay: the VJP with the checkpoint equals the VJP without, and both equal the numpy
  VJP for the mask the port's forward drew (`implementations.stateful_reference`), never its
  own VJP; a recompute that draws a fresh mask fails, naming the share of the mask changed.
- (l.2) the stream: the framework's RNG state after the step is the same on and off.
- (l.3) state once: the running statistics (and counters) are the canonical's single update,
  converted across momentum conventions; at rate 0 output and statistics are the canonical's.
- (l.4) the mask's law: the kept share is 1 - rate by a two-sided binomial test at
  `FALSE_ALARM`, on masks from fixed seeds (never flakes), and the kept elements are scaled
  by 1 / (1 - rate).

A port is held to its declaration (its own `state_declarations`, else its stack's
`Expectations.stateful`): a declared degradation is measured to its count."""

from __future__ import annotations

import dataclasses
import functools
import math
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from implementations import stateful, stateful_reference
from implementations.contract import Implementation
from implementations.stacks.numpy import canonical_params
from implementations.stateful import StateDeclaration, StateStep

from .. import strategies
from ..checks import check_shape, fail, within
from .schema import in_stack, on_port, own_table, stack_tables
from .spec import Property

#: (l.4)'s false-alarm rate: a correct port's masks fail the binomial test this rarely, and on
#: fixed seeds its verdict never changes between runs.
FALSE_ALARM = 1e-6
#: (l.4)'s masks: at least this many elements, from steps on fixed seeds 0, 1, ... at the
#: case's shape and `LAW_RATE` (the rate the examples draw: no compile of its own). A kept
#: share 0.1 off its 0.75 reads 5.2 standard deviations on 512 draws, past `FALSE_ALARM`'s 4.9.
LAW_DRAWS = 512
LAW_RATE = strategies.STATE_RATES[-1]
#: (l) runs at most this many examples: each is two steps and the law's (once per shape), and
#: a compile per rate and checkpoint on a compiling stack.
STATE_EXAMPLES = 3


@functools.cache
def tables() -> dict[str, dict[str, StateDeclaration]]:
    """Every port's declarations the stacks write: port -> variant -> `StateDeclaration`."""
    return stack_tables("stateful", "port")


def own(port: Any) -> Mapping[str, StateDeclaration] | None:
    """The declarations `port` writes itself (variant -> `StateDeclaration`), or None."""
    return own_table(port, "state_declarations")


def declaration_of(port: Any, variant: str) -> tuple[StateDeclaration | None, str]:
    """`port`'s declaration for `variant` (None where none is written) and where it is looked
    for, in words."""
    mine = own(port)
    if mine is not None:
        return mine.get(variant), "in the port's own state_declarations"
    # Its own name first, then each base's: a subclass keeps its base's declaration (a mutant,
    # renamed; an outside port on a built-in one), as it keeps its base's step.
    # (`name_lineage`, not the port's type: a worker hands the property a proxy of the port.)
    names = [port.name, *getattr(port, "name_lineage", ())]
    name = next((n for n in names if isinstance(n, str) and n in tables()), port.name)
    table = tables().get(name, {})
    return table.get(variant), f"for {name} in its stack's expectations.py (stateful)"


def not_expressible(port: Any) -> str | None:
    """Why (l) has nothing to check on `port`, or None."""
    if stateful.variants(port):
        return None
    return f"not expressible: {stateful.not_stateful(port)}"


def arrays_of(case) -> dict[str, np.ndarray]:
    """The block's parameters for `case`'s seed, by canonical name: the first exercise's (the
    numpy stack's Flax init), gamma ones, beta zeros."""
    params = canonical_params(case.seed, case.x.shape[1], case.features)
    features = case.features
    return {
        "w1": params.w1,
        "b1": params.b1,
        "gamma": np.ones(features, np.float32),
        "beta": np.zeros(features, np.float32),
        "w2": params.w2,
        "b2": params.b2,
    }


def step_of(port: Implementation, case, checkpoint: bool, variant: str, rate=None, seed=None):
    """The port's `state_step` on `case` (at `rate` and `seed` where given), checked to be a
    `StateStep` of the case's shapes."""
    rate = case.rate if rate is None else rate
    seed = case.seed if seed is None else seed
    what = f"state_step ({variant}, checkpoint {'on' if checkpoint else 'off'})"
    found = port.state_step(seed, case.x, case.features, rate, case.cotangent, checkpoint, variant)
    if not isinstance(found, StateStep):
        fail(port.name, what, f"returned a {type(found).__name__}, not stateful.StateStep")
    batch, features = case.x.shape[0], case.features
    if rate == 0.0 and isinstance(found.mask, stateful.NotObservable):
        # At rate 0 dropout is the identity, and a framework draws nothing to observe: its
        # mask is every element kept, whatever the instrument can see.
        found = dataclasses.replace(found, mask=np.ones((batch, features), bool))
    check_shape(port.name, f"{what}: y", found.y, (batch, features))
    for name, mask in (("mask", found.mask), *(("recompute mask", m) for m in seen_masks(found))):
        if not isinstance(mask, stateful.NotObservable):
            check_shape(port.name, f"{what}: {name}", mask, (batch, features))
    return found


def seen_masks(found: StateStep) -> tuple[np.ndarray, ...]:
    """The recompute masks `found` reports (none where they are not observable)."""
    masks = found.recompute_masks
    return () if isinstance(masks, stateful.NotObservable) else masks


def changed(mask: np.ndarray, other: np.ndarray) -> float:
    """The share of elements where two masks differ."""
    return float(np.mean(np.asarray(mask, bool) != np.asarray(other, bool)))


def _values(port, what, found: StateStep, case, arrays, mask, label="") -> float:
    """`found`'s y (for its forward mask) and VJP (for `mask`) against the numpy block's."""
    forward = stateful_reference.step(arrays, case.x, found.mask, case.rate, case.cotangent)
    bounds = stateful_reference.bounds(
        arrays, case.x, found.mask, case.rate, case.cotangent, forward
    )
    worst = within(port.name, f"{what}: y", found.y, forward.y, bounds["y"])
    pulled = stateful_reference.step(arrays, case.x, mask, case.rate, case.cotangent)
    vjp_bounds = stateful_reference.bounds(arrays, case.x, mask, case.rate, case.cotangent, pulled)
    for name in stateful.STATE_GRAD_NAMES:
        worst = max(
            worst,
            within(
                port.name,
                f"{what}: VJP d/d{name}{label}",
                found.grads[name],
                pulled.grads[name],
                vjp_bounds[name],
            ),
        )
    return worst


def check_replay(port, declaration, on: StateStep, off: StateStep, case, arrays) -> float:
    """(l.1) Both VJPs equal the numpy VJP for the mask drawn (the recompute's mask where a
    fresh one is declared, with its count); on and off drew the same mask from one state."""
    what = "(l.1) replay"
    for found, side in ((on, "on"), (off, "off")):
        if isinstance(found.mask, stateful.NotObservable):
            fail(port.name, what, f"the forward's mask, checkpoint {side}: {found.mask}")
    if case.rate > 0 and changed(on.mask, off.mask):
        fail(
            port.name,
            what,
            f"from one RNG state, checkpoint on and off draw different masks "
            f"({changed(on.mask, off.mask):.0%} of the elements differ)",
        )
    fresh = [m for m in seen_masks(on) if changed(m, on.mask)]
    degraded = declaration.degradation("replay") if case.rate > 0 else None
    mask, label = on.mask, ""
    if degraded is None and fresh:
        fail(
            port.name,
            what,
            f"the recompute drew a fresh mask: "
            f"{changed(fresh[0], on.mask):.0%} of its elements changed ({len(fresh)} of "
            f"{len(seen_masks(on))} recomputes)",
        )
    if degraded is not None:
        held = f" (declared: {degraded.what}, {degraded.upstream})"
        if isinstance(on.recompute_masks, stateful.NotObservable):
            fail(
                port.name,
                what,
                f"a declared fresh mask needs the recompute's mask{held}: {on.recompute_masks}",
            )
        if len(fresh) != degraded.count:
            fail(
                port.name,
                what,
                f"{len(fresh)} recompute(s) drew a fresh mask, declared {degraded.count}{held}",
            )
        mask, label = fresh[-1], " (for the recompute's mask, as declared)"
    worst = _values(port, f"{what}, checkpoint off", off, case, arrays, off.mask)
    return max(worst, _values(port, f"{what}, checkpoint on", on, case, arrays, mask, label))


def check_stream(port, declaration, on: StateStep, off: StateStep, rate: float = 0.5) -> None:
    """(l.2) The RNG state after one step is the same with the checkpoint on and off (or, for
    a declared degradation, differs: at rate 0, where a framework may draw nothing, a declared
    move need not show; an undeclared one still fails)."""
    what = "(l.2) the stream"
    for label, value in (
        ("before", on.rng_before),
        ("after", on.rng_after),
        ("before", off.rng_before),
        ("after", off.rng_after),
    ):
        if isinstance(value, stateful.NotObservable):
            fail(port.name, what, f"the RNG state {label} the step: {value}")
    if on.rng_before != off.rng_before:
        fail(port.name, what, "checkpoint on and off start from different RNG states")
    degraded = declaration.degradation("stream")
    moved = on.rng_after != off.rng_after
    if degraded is None and moved:
        fail(
            port.name,
            what,
            "the RNG state after one step differs with the checkpoint on and "
            "off: the checkpoint moves the stream, so every later draw differs",
        )
    if degraded is not None and not moved and rate > 0:
        fail(
            port.name,
            what,
            f"the RNG state after one step is the same on and off, declared "
            f"moved ({degraded.what}, {degraded.upstream}): update the declaration",
        )


def _updates_fit(found: StateStep, expected_at, bound) -> int | None:
    """How many updates (0 to 3) the running mean shows, where one count alone fits."""
    fits = [n for n in range(4) if np.all(np.abs(found.running_mean - expected_at(n)[0]) <= bound)]
    return fits[0] if len(fits) == 1 else None


def statistics(declaration: StateDeclaration, case, arrays):
    """What (l.3) holds the statistics to: `expected_at(n)`, the running mean and variance
    after n of the canonical's updates in the declaration's conventions, their bounds, and the
    block's bounds at rate 0."""
    kept_all = np.ones(case.cotangent.shape, bool)
    base = stateful_reference.step(arrays, case.x, kept_all, 0.0, case.cotangent)
    bounds = stateful_reference.bounds(arrays, case.x, kept_all, 0.0, case.cotangent, base)
    batch = case.x.shape[0]
    widen = batch / (batch - 1) if declaration.running_var == "unbiased" else 1.0

    def expected_at(updates: int):
        return stateful_reference.running(
            base.mean, base.var, batch, updates, declaration.momentum, declaration.running_var,
            declaration.var_start,
        )  # fmt: skip

    # Each update adds its own rounding to the batch statistic's error.
    mean_bound = bounds["mean"] + 4 * stateful_reference.U * np.abs(expected_at(2)[0])
    var_bound = widen * bounds["var"] + 4 * stateful_reference.U * np.abs(expected_at(2)[1])
    return expected_at, mean_bound, var_bound, bounds


def updates_seen(found: StateStep, declaration: StateDeclaration, case, arrays) -> int | None:
    """How many of the canonical's updates (0 to 3) `found`'s running mean is, where one count
    alone fits (None: none or several)."""
    expected_at, mean_bound, _, _ = statistics(declaration, case, arrays)
    return _updates_fit(found, expected_at, mean_bound)


def check_state(port, declaration, on: StateStep, off: StateStep, case, arrays, reference) -> float:
    """(l.3) The statistics after one step are the declared number of the canonical's updates
    (once without the checkpoint), converted across momentum conventions; counters agree."""
    what = "(l.3) state once"
    kept = declaration.momentum.kept
    if not math.isclose(kept, stateful.MOMENTUM, abs_tol=1e-12):
        momentum = declaration.momentum
        fail(
            port.name,
            what,
            f"its momentum {momentum.value} ({momentum.convention} "
            f"convention) keeps {kept:g} of the old value, the canonical {stateful.MOMENTUM}",
        )
    expected_at, mean_bound, var_bound, bounds = statistics(declaration, case, arrays)
    unbiased = declaration.running_var == "unbiased"
    worst = 0.0
    for found, side, updates in ((off, "off", 1), (on, "on", declaration.updates)):
        degraded = declaration.degradation("updates") if updates != 1 else None
        held = f" (declared: {degraded.what}, {degraded.upstream})" if degraded else ""
        mean, var = expected_at(updates)
        if not np.all(np.abs(found.running_mean - mean) <= mean_bound):
            seen = _updates_fit(found, expected_at, mean_bound)
            said = (
                f"{seen} of the canonical's updates"
                if seen is not None
                else "no number (0 to 3) of the canonical's updates: the momentum or its "
                "convention differs"
            )
            fail(
                port.name,
                f"{what}, checkpoint {side}",
                f"the running mean is {said}, expected {updates}{held}; "
                f"max |error| {np.max(np.abs(found.running_mean - mean)):.3e}",
            )
        worst = max(
            worst,
            within(
                port.name,
                f"{what}, checkpoint {side}: running variance",
                found.running_var,
                var,
                var_bound,
            ),
        )
        if isinstance(found.updates, int) and found.updates != updates:
            fail(
                port.name,
                f"{what}, checkpoint {side}",
                f"its instrument counted {found.updates} updates, expected {updates}{held}",
            )
        for counter in declaration.counters:
            if found.counters.get(counter) != updates:
                fail(
                    port.name,
                    f"{what}, checkpoint {side}",
                    f"counter {counter} is "
                    f"{found.counters.get(counter, 'not reported')}, expected {updates}{held}",
                )
    if case.rate == 0.0 and reference is not None:
        canonical = reference
        worst = max(
            worst,
            within(
                port.name,
                f"{what}, rate 0: y against the canonical",
                on.y,
                canonical["y"],
                2 * bounds["y"],
            ),
        )
        if declaration.updates == 1 and declaration.var_start == 1.0 and not unbiased:
            for name, mine, theirs, bound in (
                ("running mean", on.running_mean, canonical["running_mean"], 2 * mean_bound),
                ("running variance", on.running_var, canonical["running_var"], 2 * var_bound),
            ):
                worst = max(
                    worst,
                    within(
                        port.name,
                        f"{what}, rate 0: {name} against the canonical",
                        mine,
                        theirs,
                        bound,
                    ),
                )
    return worst


def binomial_p(kept: int, total: int, p: float) -> float:
    """Two-sided exact binomial p-value: the probability of a count at most as likely as
    `kept` among `total` draws that each keep with probability `p`."""
    logs = [
        math.lgamma(total + 1)
        - math.lgamma(k + 1)
        - math.lgamma(total - k + 1)
        + k * math.log(p)
        + (total - k) * math.log1p(-p)
        for k in range(total + 1)
    ]
    here = logs[kept] + 1e-9
    return min(1.0, sum(math.exp(v) for v in logs if v <= here))


def law_seeds(batch: int, features: int) -> range:
    """The fixed seeds whose masks give the law at least `LAW_DRAWS` elements."""
    return range(math.ceil(LAW_DRAWS / (batch * features)))


def check_law(port, variant: str, case, arrays_at) -> float:
    """(l.4) Masks from `law_seeds` at `LAW_RATE` keep 1 - rate of the elements (binomial test
    at `FALSE_ALARM`), and each step's output is its kept elements scaled by 1 / (1 - rate)."""
    seeds = law_seeds(case.x.shape[0], case.features)
    what = f"(l.4) the mask's law (rate {LAW_RATE}, seeds {seeds[0]} to {seeds[-1]})"
    kept = total = 0
    worst = 0.0
    law_case = strategies.StateCase(0, case.x, case.features, LAW_RATE, case.cotangent)
    for seed in seeds:
        found = step_of(port, law_case, True, variant, LAW_RATE, seed)
        if isinstance(found.mask, stateful.NotObservable):
            fail(port.name, what, f"the forward's mask: {found.mask}")
        kept, total = kept + int(np.sum(found.mask)), total + found.mask.size
        arrays = arrays_at(seed)
        unscaled = stateful_reference.step(arrays, case.x, found.mask, 0.0, case.cotangent)
        scaled = stateful_reference.step(arrays, case.x, found.mask, LAW_RATE, case.cotangent)
        bound = stateful_reference.bounds(
            arrays, case.x, found.mask, LAW_RATE, case.cotangent, scaled
        )["y"]
        base = unscaled.y - arrays["b2"]  # (a * mask) @ w2: the output before the scaling
        weight = float(np.sum(base * base))
        if weight == 0.0:
            continue
        scale = float(np.sum(base * (found.y - arrays["b2"]))) / weight
        allowed = float(np.sum(np.abs(base) * bound)) / weight
        wanted = 1.0 / (1.0 - LAW_RATE)
        if abs(scale - wanted) > allowed:
            fail(
                port.name,
                what,
                f"seed {seed}: the kept elements are scaled by {scale:.6g}, "
                f"expected 1 / (1 - rate) = {wanted:g} (within {allowed:.2e})",
            )
        worst = max(worst, abs(scale - wanted) / allowed if allowed else 0.0)
    p = binomial_p(kept, total, 1.0 - LAW_RATE)
    if p < FALSE_ALARM:
        fail(
            port.name,
            what,
            f"keeps {kept} of {total} elements ({kept / total:.3f}), expected "
            f"{1 - LAW_RATE:g}: two-sided binomial p = {p:.2e} < {FALSE_ALARM:g}",
        )
    return worst


def prepare_state(canonical: Implementation, case) -> dict[str, Any] | None:
    """The canonical's step at rate 0, for (l.3)'s cross-framework check: its output and
    statistics (None at other rates)."""
    if case.rate != 0.0:
        return None
    step = canonical.state_step(
        case.seed, case.x, case.features, 0.0, case.cotangent, True, stateful.DEFAULT_VARIANT
    )
    return {"y": step.y, "running_mean": step.running_mean, "running_var": step.running_var}


def check_state_property(port: Implementation, reference: Any, case) -> float:
    """(l) Every variant the port declares: replay, the stream, state once, the mask's law."""
    worst = 0.0
    arrays = arrays_of(case)
    for variant in stateful.variants(port):
        # The steps first: an unfinished port fails on its own TODO, not on what it declares.
        on = step_of(port, case, True, variant)
        off = step_of(port, case, False, variant)
        declaration, whose = declaration_of(port, variant)
        if declaration is None:
            fail(
                port.name,
                f"(l) variant {variant}",
                f"no declaration of the stateful block is written down (looked for one "
                f"{whose}; docs/PORTING.md, Randomness and state)",
            )
        worst = max(worst, check_replay(port, declaration, on, off, case, arrays))
        check_stream(port, declaration, on, off, case.rate)
        worst = max(worst, check_state(port, declaration, on, off, case, arrays, reference))

        def law_arrays(seed, case=case):
            return arrays_of(
                strategies.StateCase(seed, case.x, case.features, LAW_RATE, case.cotangent)
            )

        worst = max(worst, _law_once(port, variant, case, law_arrays))
    return worst


#: port object -> {(variant, x's shape, F): the worst of its law, checked}. Keyed by the
#: object, never its name: no other port's check stands for this one's.
_LAW_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _law_once(port, variant: str, case, law_arrays) -> float:
    """`check_law` once per port object, variant and shape: its steps come from fixed seeds
    at the case's shape, so the examples after the first would repeat the same steps. A
    failure raises, and is checked again next time; a port that cannot be weakly referenced
    is checked every time."""
    key = (variant, case.x.shape, case.features)
    try:
        checked = _LAW_CHECKED.setdefault(port, {})
    except TypeError:
        return check_law(port, variant, case, law_arrays)
    if key not in checked:
        checked[key] = check_law(port, variant, case, law_arrays)
    return checked[key]


#: What (l) reads beyond the contract: the variants a port offers, and what each does.
READS = (
    on_port(
        "name_lineage",
        tuple[str, ...],
        "its class's and its bases' names: a subclass keeps its bases' declarations",
    ),
    on_port(
        "state_step",
        Callable,
        "(seed, x, features, rate, cotangent, checkpoint, variant) -> StateStep",
    ),
    on_port(
        "state_variants", Mapping[str, str], "API variant -> native spelling", stateful.variants
    ),
    on_port("not_stateful", str, "why the port cannot express the block", stateful.not_stateful),
    on_port(
        "state_declarations",
        Mapping[str, StateDeclaration],
        "the port's own: variant -> StateDeclaration (an outside port's)",
        own,
    ),
    in_stack(
        "stateful",
        Mapping[str, Mapping[str, StateDeclaration]],
        "port -> variant -> StateDeclaration, in the stack's expectations.py",
        tables,
    ),
)

#: A stack's mutant that declares `killed_by="l"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (the JAX stack's six state mutants); the suite's own: none.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "l",
    "state",
    "dropout and BatchNorm under recompute: replay, the RNG stream, state "
    "updated once, the mask's law",
    check_state_property,
    prepare_state,
    strategy=strategies.state_cases,
    examples=STATE_EXAMPLES,
    not_applicable=not_expressible,
    checks_canonical=True,
    cost=120,
    reads=READS,
    mutants=MUTANTS,
)
