"""The properties every port must satisfy, (a) to (k).

Each property has two halves. `prepare(canonical, case)` computes what the
port is compared with: the canonical port's results and the error bounds;
it depends on the case alone, so a run can make it once for every port
(`conformance.running.example_bank`). `check(port, reference, case)` runs the port, returns
the worst error/bound ratio it saw (None where there is no bound) and raises
`ConformanceError` when the port breaks the property.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from implementations import composition
from implementations.contract import (
    BAD_INIT_INPUTS,
    BAD_INPUTS,
    MEASURED_BY_BASE,
    PARAM_NAMES,
    BackwardRecord,
    BadInput,
    Grads,
    Implementation,
    Params,
    byte_budget,
    param_shapes,
)
from implementations.policies import SAVED_NAME, Policy, declared
from implementations.stacks import Port
from implementations.stacks.numpy import canonical_params

from . import composition as composed_records
from . import policy_expectations, precision, provenance, strategies
from .checks import bitwise_equal, check_count, check_shape, fail, within, within_ulps
from .tolerance import INIT_ULPS, analyse_vjp, forward_bound, vjp_comparison


@dataclass(frozen=True)
class Property:
    """One property: its letter, what it checks, its inputs, and the two halves of its check.

    **Arguments:**

    - `id`: the letter, "a" to "k".
    - `name`: a short name for reports and test ids.
    - `title`: one line for people.
    - `check`: `(port, reference, case) -> worst ratio or None`: the port's
      side; it raises `ConformanceError` when the port breaks the property.
    - `prepare`: `(canonical, case) -> reference`: what the port is compared
      with (the canonical port's results, the error bounds). It depends on
      the case alone, so a run may make it once and keep it (`bank`);
      `canonical` is None for properties that do not need it. None: the
      check needs no reference.
    - `strategy`: `scope -> SearchStrategy` of cases, for Hypothesis (scope:
      see `strategies.shapes`).
    - `cases`: instead of a strategy, a finite list run in full.
    - `needs_canonical`: False for properties a port can meet on its own.
    - `examples`: at most this many examples per run, whatever the profile
      asks (a property whose example is costly); None: the profile's.
    - `share`: this share of the examples asked for (at least one), for a property whose
      verdict turns on the shape, not on the values; None: all of them.
    - `not_applicable`: `port -> reason or None`: why the property has nothing to check on
      a port (it is then reported skipped, with the reason, never passed).
    - `checks_canonical`: the canonical port is checked too, against its own reference (a
      property whose port-side check says more than the values: (k)'s records).
    - `cost`: what its check costs a mutant, against the others' (1 the cheapest; each
      property its own): the mutation run tries the cheapest first
      (`conformance.running.mutation.KILL_ORDER`).
    """

    id: str
    name: str
    title: str
    check: Callable[[Implementation, Any, Any], float | None]
    prepare: Callable[[Implementation | None, Any], Any] | None = None
    strategy: Callable[[str], st.SearchStrategy] | None = None
    cases: Callable[[], Sequence[Any]] | None = None
    needs_canonical: bool = True
    examples: int | None = None
    share: float | None = None
    not_applicable: Callable[[Implementation], str | None] | None = None
    checks_canonical: bool = False
    cost: int = 0

    @property
    def key(self) -> str:
        return f"{self.id}_{self.name}"

    def capped(self, max_examples: int | None) -> int | None:
        """`max_examples` (None: the profile's), times `share`, at most `examples`."""
        if self.examples is None and self.share is None:
            return max_examples
        if max_examples is None:
            from hypothesis import settings

            max_examples = settings().max_examples
        if self.share is not None:
            max_examples = max(1, math.ceil(max_examples * self.share))
        return max_examples if self.examples is None else min(max_examples, self.examples)


def _params(port: Implementation, value: Any) -> Params:
    if not isinstance(value, Params):
        fail(port.name, "init_params", f"returned a {type(value).__name__}, not contract.Params")
    return value


def prepare_init(canonical: Implementation, case) -> Params:
    return _params(canonical, canonical.init_params(case.seed, case.dim, case.features))


def check_init(port: Implementation, reference: Params, case) -> float:
    """(a) The port's own seeded init equals the canonical parameters to 2 ulp."""
    mine = _params(port, port.init_params(case.seed, case.dim, case.features))
    return max(
        within_ulps(
            port.name, f"init {name}", getattr(mine, name), getattr(reference, name), INIT_ULPS
        )
        for name in PARAM_NAMES
    )


def prepare_forward(canonical: Implementation, case) -> dict[str, np.ndarray]:
    return {
        "output": np.asarray(canonical.forward(case.params, case.x, checkpoint=True)),
        "bound": forward_bound(case.params, case.x),
    }


def check_forward(port: Implementation, reference: dict, case) -> float:
    """(b) From shared parameters, the forward pass equals the canonical."""
    out = port.forward(case.params, case.x, checkpoint=True)
    return within(port.name, "forward output", out, reference["output"], reference["bound"])


def _grads(port: Implementation, value: Any) -> Grads:
    if not isinstance(value, Grads):
        fail(port.name, "vjp", f"returned a {type(value).__name__}, not contract.Grads")
    return value


def prepare_vjp(canonical: Implementation, case) -> dict[str, Any]:
    grads = _grads(canonical, canonical.vjp(case.params, case.x, case.cotangent, checkpoint=True))
    return {"grads": grads.as_dict(), "analysis": analyse_vjp(case.params, case.x, case.cotangent)}


def check_vjp(port: Implementation, reference: dict, case) -> float:
    """(c) The VJP equals the canonical, for every parameter gradient and the x gradient."""
    grads = _grads(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=True))
    return _compare_grads(
        port.name, "VJP d/d{}", case, reference["analysis"], grads.as_dict(), reference["grads"]
    )


def _compare_grads(port: str, quantity: str, case, analysis, grads: dict, reference: dict) -> float:
    comparison = vjp_comparison(
        case.params, case.x, case.cotangent, grads, reference, analysis=analysis
    )
    return max(
        within(port, quantity.format(name), grads[name], reference[name], bound, shift)
        for name, (shift, bound) in comparison.items()
    )


def prepare_on_off(canonical: None, case) -> dict[str, Any]:
    return {
        "bound": forward_bound(case.params, case.x),
        "analysis": analyse_vjp(case.params, case.x, case.cotangent),
    }


def check_checkpoint_is_transparent(port: Implementation, reference: dict, case) -> float:
    """(d) Checkpoint on equals checkpoint off, within the port, forward and VJP."""
    on = port.forward(case.params, case.x, checkpoint=True)
    off = port.forward(case.params, case.x, checkpoint=False)
    worst = within(port.name, "forward, checkpoint on vs off", on, off, reference["bound"])
    grads_on = _grads(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=True))
    grads_off = _grads(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=False))
    quantity = "VJP d/d{}, checkpoint on vs off"
    comparison = _compare_grads(
        port.name, quantity, case, reference["analysis"], grads_on.as_dict(), grads_off.as_dict()
    )
    return max(worst, comparison)


def _record(port: Implementation, what: str, value: Any) -> BackwardRecord:
    """`value`, checked to be a record and stamped with who measured it (`provenance`); a
    record read off the base's model, beside the call whose values are checked, fails."""
    if not isinstance(value, BackwardRecord):
        fail(port.name, what, f"returned a {type(value).__name__}, not contract.BackwardRecord")
    record = provenance.stamped(port, value)
    if record.measured_by == MEASURED_BY_BASE:
        fail(
            port.name,
            what,
            "its evidence is read off the base's model, not off the call whose values are "
            "checked (a value method set on the instance, which the record never runs)",
        )
    return record


def _expect_checkpointed(port: str, what: str, record: BackwardRecord) -> None:
    activations = record.saved_by_origin("activation")
    if activations:
        listed = ", ".join(f"{t.shape} {t.dtype} ({t.note})" for t in activations)
        fail(port, what, f"saves {len(activations)} activation(s) for backward: {listed}")
    if record.recomputed_count == 0:
        fail(port, what, "the backward pass recomputes nothing: no checkpoint on the grad path")
    if record.checkpoint_regions is not None and record.checkpoint_regions < 1:
        fail(port, what, f"{record.instrument} finds no checkpoint region")


def check_evidence(port: Implementation, reference: None, case) -> None:
    """(e) The framework's own instrument shows the checkpoint on the grad path."""
    param_case, seed = case
    params, x = param_case.params, param_case.x
    on = _record(port, "backward_record", port.backward_record(params, x, checkpoint=True))
    _expect_checkpointed(port.name, "VJP with checkpoint on", on)

    off = _record(port, "backward_record", port.backward_record(params, x, checkpoint=False))
    if not off.saved_by_origin("activation"):
        fail(
            port.name,
            "VJP with checkpoint off",
            "saves no activation: the instrument proves nothing",
        )
    if off.recomputed_count:
        fail(port.name, "VJP with checkpoint off", f"recomputes {dict(off.recomputed)}")
    if off.checkpoint_regions:
        fail(
            port.name,
            "VJP with checkpoint off",
            f"has {off.checkpoint_regions} checkpoint region(s)",
        )

    exercise = _record(port, "exercise_record", port.exercise_record(seed, x, params.features))
    _expect_checkpointed(port.name, "grad of nn_checkpoint_forward", exercise)
    if hasattr(port, "rank_records"):  # a sharded port: each rank's own evidence too
        _check_ranks(port, params, x)


#: The least width of the rank evidence's shapes: XLA turns a matmul that contracts one
#: element into a multiply, which would hide a rerun matmul from the count.
RANK_EVIDENCE_MIN_WIDTH = 8


def _check_ranks(port: Implementation, params: Params, x: np.ndarray) -> None:
    """(e) on a sharded port (`implementations.sharding`), in each of its layouts, on a batch
    of 2N rows (D and F at least `RANK_EVIDENCE_MIN_WIDTH`, F a multiple of N so that every
    shard is whole): every rank keeps x's shard only, at most 1/N of what the port keeps of
    the same batch unsharded (its own record of one example, times the rows) where the layout
    splits x, and reruns forward matmuls that it does not run without the checkpoint."""
    ranks = int(port.ranks)
    dim = max(params.dim, RANK_EVIDENCE_MIN_WIDTH)
    features = -(-max(params.features, RANK_EVIDENCE_MIN_WIDTH) // ranks) * ranks
    shaped = canonical_params(0, dim, features)
    x = np.resize(x, dim).astype(np.float32)
    single = _record(port, "backward_record", port.backward_record(shaped, x, checkpoint=False))
    batch = np.stack([x * (1 + i / (2 * ranks)) for i in range(2 * ranks)]).astype(np.float32)
    unsharded = len(batch) * single.saved_bytes
    for layout in port.layouts:
        on = port.rank_records(shaped, batch, layout, checkpoint=True)
        off = port.rank_records(shaped, batch, layout, checkpoint=False)
        what = f"rank evidence, {layout} layout, {ranks} ranks"
        if len(on) != ranks or len(off) != ranks:
            fail(port.name, what, f"records for {len(on)} and {len(off)} ranks, not {ranks}")
        for with_, without in zip(on, off, strict=True):
            # The rank, with its node and its process where the record says them.
            where = f"{what}, {getattr(with_, 'where', f'rank {with_.rank}')}"
            if with_.kept_bytes != with_.x_shard_bytes:
                fail(
                    port.name, where,
                    f"keeps {with_.kept_bytes} bytes with the checkpoint "
                    f"({with_.activation_bytes} of activations); x's shard is "
                    f"{with_.x_shard_bytes}",
                )  # fmt: skip
            if layout == "batch" and with_.kept_bytes * ranks > unsharded:
                fail(
                    port.name, where,
                    f"keeps {with_.kept_bytes} bytes, more than 1/{ranks} of the "
                    f"{unsharded} the unsharded VJP keeps of the same batch",
                )  # fmt: skip
            if without.activation_bytes <= 0:
                fail(port.name, where, "keeps no activation without the checkpoint: "
                     "the instrument proves nothing")  # fmt: skip
            if not with_.backward_ops or with_.backward_matmuls <= without.backward_matmuls:
                fail(
                    port.name, where,
                    f"backward reruns {with_.backward_ops or 'nothing'} and runs "
                    f"{with_.backward_matmuls} matmuls, {without.backward_matmuls} without "
                    "the checkpoint: no recomputation on this rank",
                )  # fmt: skip
            if without.backward_ops:
                fail(port.name, where, f"reruns {without.backward_ops} without the checkpoint")


def _run_seeded_forward(port: Implementation, case, x: Any) -> np.ndarray:
    out = port.to_numpy(port.nn_checkpoint_forward(case.seed, x, case.features))
    check_shape(port.name, "nn_checkpoint_forward output", out, (int(case.features),))
    if out.dtype != np.float32:
        fail(port.name, "nn_checkpoint_forward output", f"dtype {out.dtype}, expected float32")
    return out


def prepare_end_to_end(canonical: Implementation, case) -> dict[str, np.ndarray]:
    params = _params(canonical, canonical.init_params(case.seed, case.dim, case.features))
    return {
        "output": _run_seeded_forward(canonical, case, canonical.from_numpy(case.x.copy())),
        # Each port makes its own init, which may differ by INIT_ULPS from Flax's.
        "bound": forward_bound(params, case.x, param_ulps=INIT_ULPS),
    }


def check_end_to_end(port: Implementation, reference: dict, case) -> float:
    """(f) `nn_checkpoint_forward(seed, x, features)` equals the canonical's."""
    out = _run_seeded_forward(port, case, port.from_numpy(case.x.copy()))
    return within(
        port.name, "nn_checkpoint_forward output", out, reference["output"], reference["bound"]
    )


def check_bad_input(port: Implementation, reference: None, case) -> None:
    """(g) A bad input raises the contract's exception type, naming the argument. A bad
    `init_params` call goes to ports that check its inputs (`checks_init_inputs`: process
    ports, whose protocol requires it); for the others it is not a case."""
    bad, form = case
    bad: BadInput
    if bad.call == "init_params":
        if not getattr(port, "checks_init_inputs", False):
            return None
        quantity = f"bad input '{bad.label}'"
        call = lambda: port.init_params(bad.seed, bad.dim, bad.features)  # noqa: E731
    else:
        x = bad.x(port.from_numpy if form == "native" else np.asarray)
        quantity = f"bad input '{bad.label}' ({form} x)"
        call = lambda: port.nn_checkpoint_forward(bad.seed, x, bad.features)  # noqa: E731
    try:
        with byte_budget(bad.max_bytes):
            call()
    except Exception as error:
        if not isinstance(error, bad.error):
            fail(
                port.name,
                quantity,
                f"raised {type(error).__name__}: {error}; expected {bad.error.__name__}",
            )
        # The argument as a word: "x" in "expected" names nothing.
        if not re.search(rf"\b{re.escape(bad.argument)}\b", str(error)):
            fail(port.name, quantity, f"the message does not name {bad.argument!r}: {error}")
    else:
        fail(
            port.name,
            quantity,
            f"was accepted; expected {bad.error.__name__} naming {bad.argument!r}",
        )
    return None


def check_call_hygiene(port: Implementation, reference: None, case) -> None:
    """(h) x is left unchanged, the output is float32 `(F,)`, and calls repeat exactly; the
    arrays handed to forward and vjp are never written (`check_no_writes`)."""
    check_no_writes(port, case)
    forms = {
        "numpy": lambda: case.x.copy(),
        "native": lambda: port.from_numpy(case.x.copy()),
        "list": lambda: case.x.tolist(),
    }
    for form, make in forms.items():
        x = make()
        first = _run_seeded_forward(port, case, x)
        second = _run_seeded_forward(port, case, x)
        after = port.to_numpy(x) if form == "native" else np.asarray(x, np.float32)
        bitwise_equal(port.name, f"x after the call ({form} x)", after, case.x)
        bitwise_equal(port.name, f"a repeated call ({form} x)", second, first)
    return None


def check_no_writes(port: Implementation, case) -> None:
    """The params, x and cotangent handed to forward and vjp stay as handed: read-only, as
    the contract says, and unchanged. They are handed as read-only arrays that own their
    memory, so that a port *could* turn the write flag back on: one that does, or writes
    (through any view), is named with the array. (Elsewhere a port is handed arrays it
    cannot unseal at all: `conformance.running.sealed`.)"""
    dim, features = int(case.dim), int(case.features)  # a case may hold them as 7.0
    params = canonical_params(int(case.seed), dim, features)
    originals = {f"params.{name}": getattr(params, name) for name in PARAM_NAMES}
    originals["x"] = np.asarray(case.x, np.float32)
    originals["cotangent"] = np.ones(features, np.float32)
    handed = {}
    for name, array in originals.items():
        handed[name] = np.array(array, copy=True)
        handed[name].flags.writeable = False
    handed_params = object.__new__(Params)  # these very arrays, not Params' own copies
    for name in PARAM_NAMES:
        object.__setattr__(handed_params, name, handed[f"params.{name}"])
    try:
        port.forward(handed_params, handed["x"], checkpoint=True)
        port.vjp(handed_params, handed["x"], handed["cotangent"], checkpoint=True)
    except ValueError as error:
        if "read-only" not in str(error):
            raise
        fail(port.name, "an array it was handed", f"written, though read-only: {error}")
    for name, array in handed.items():
        if array.flags.writeable:
            fail(port.name, name, "its write flag was turned back on (it is handed read-only)")
        if not np.array_equal(array, originals[name], equal_nan=True):
            fail(port.name, name, "written by the call (it is handed read-only)")


def prepare_precision(canonical: None, case) -> precision.Reference:
    # The exact results need no canonical port: the exercise's parameters
    # come from the numpy canonical init (within INIT_ULPS of Flax's).
    exercise = canonical_params(case.seed, case.dim, case.features)
    return precision.reference(case.params, case.x, case.cotangent, exercise)


def check_precision(port: Implementation, reference: precision.Reference, case) -> float:
    """(i) Forward, VJP and exercise are as close to the exact result as float32 arithmetic
    gets: a median error within the precision tier's threshold (`checking.precision`)."""
    # Each step is judged before the next runs, so a failure names the first result off.
    out = np.asarray(port.forward(case.params, case.x, checkpoint=True))
    check_shape(port.name, "forward output", out, (case.features,))
    results = _precision_verdict(
        port.name, [precision.judge_output("output", out, reference.forward)]
    )
    grads = _grads(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=True))
    shapes = {**param_shapes(case.dim, case.features), "x": (case.dim,)}
    for name, value in grads.as_dict().items():
        check_shape(port.name, f"VJP d/d{name}", value, shapes[name])
    results += _precision_verdict(
        port.name,
        precision.judge_grads(grads.as_dict(), reference, case.params, case.x, case.cotangent),
    )
    exercise = _run_seeded_forward(port, case, port.from_numpy(case.x.copy()))
    results += _precision_verdict(
        port.name, [precision.judge_output("end_to_end", exercise, reference.end_to_end)]
    )
    return max(r.ratio for r in results)


def _precision_verdict(port: str, results: list[precision.Result]) -> list[precision.Result]:
    """Fail on the first result over its threshold; **returns** the results otherwise."""
    labels = {"output": "the output", "end_to_end": "nn_checkpoint_forward's output"}
    for result in results:
        if result.failed:
            label = labels.get(result.name, result.name)
            fail(port, f"precision of {label}", precision.describe_failure(result))
    return results


#: Examples of (j) per run: each runs every declared policy (a compile per policy and
#: shape on a compiling stack), and what it saves depends on the shape alone.
POLICY_EXAMPLES = 3
#: (e) and (h) run a quarter of the examples: what a framework keeps for backward, and whether
#: a call copies x, flattens and repeats, turn on the shape (the menu has four), not on the
#: values; every mutant they must kill dies on its first example.
SHAPE_BOUND_SHARE = 0.25
#: (d) runs half: on and off differ, where they do, by the arithmetic of a recompute, which
#: every shape shows; half leaves room for values near a relu's kink.
ON_OFF_SHARE = 0.5
#: The shapes (j) draws, D < F and D > F, from the small menu; "wide" draws any.
POLICY_SHAPES = [(3, 4), (33, 7)]


@st.composite
def policy_cases(draw, scope: str = "menu") -> strategies.ParamCase:
    """Parameter cases for (j): few shapes, so that each policy compiles once or twice."""
    if scope == "wide":
        dim, features = draw(strategies.shapes(scope))
    else:
        strategies.shapes(scope)  # the scope's check
        dim, features = draw(st.sampled_from(POLICY_SHAPES))
    return strategies.ParamCase(
        params=draw(strategies.parameter_sets(dim, features)),
        x=draw(strategies.x_vectors(dim)),
        cotangent=draw(strategies.cotangents(features)),
    )


#: The budget (j) runs for a declared `budget`: 0, whose answer is exact (recompute all it
#: can, as full remat: a budget that is ignored shows there). Within (0, 1] the answer is the
#: framework's own trade-off, which hangs on the sizes: `bench --policies` measures it.
BUDGET_CHECKED = Policy("budget", 0.0)


def _policies_of(port: Implementation) -> list[Policy]:
    return [BUDGET_CHECKED if name == "budget" else Policy(name) for name in declared(port)]


def checkpoint_argument(port: Implementation, policy: Policy) -> Any:
    """`checkpoint=` for `policy`: a Policy for a `Port`, True/False for an older
    `Implementation` (which declares none and full only)."""
    if isinstance(port, Port) or policy.name not in ("none", "full"):
        return policy
    return policy.name == "full"


def prepare_policies(canonical: Implementation, case) -> dict[str, Any]:
    """The canonical port (Flax linen) under each policy it declares: output and VJP."""
    by_policy = {}
    for policy in _policies_of(canonical):
        argument = checkpoint_argument(canonical, policy)
        out = np.asarray(canonical.forward(case.params, case.x, checkpoint=argument))
        grads = canonical.vjp(case.params, case.x, case.cotangent, checkpoint=argument)
        by_policy[policy.label] = {"output": out, "grads": _grads(canonical, grads).as_dict()}
    return {
        "policies": by_policy,
        "bound": forward_bound(case.params, case.x),
        "analysis": analyse_vjp(case.params, case.x, case.cotangent),
    }


def check_policies(port: Implementation, reference: dict, case) -> float:
    """(j) Under every remat policy the port declares: output and VJP equal the canonical's
    under the same policy, and its instrument shows the saved roles and backward matmuls
    that `policy_expectations` writes down for its stack."""
    worst = 0.0
    for policy in _policies_of(port):
        argument, what = checkpoint_argument(port, policy), f"policy {policy.label}"
        # A policy the canonical cannot express (budget) is held to its no-remat run:
        # every applied policy gives the no-remat gradients.
        canonical = reference["policies"].get(policy.label) or reference["policies"]["none"]
        out = port.forward(case.params, case.x, checkpoint=argument)
        worst = max(
            worst,
            within(port.name, f"forward, {what}", out, canonical["output"], reference["bound"]),
        )
        grads = _grads(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=argument))
        worst = max(
            worst,
            _compare_grads(
                port.name,
                f"VJP d/d{{}}, {what}",
                case,
                reference["analysis"],
                grads.as_dict(),
                canonical["grads"],
            ),
        )
        record = _record(
            port, "backward_record", port.backward_record(case.params, case.x, checkpoint=argument)
        )
        check_policy_record(port, policy, record, case.params.dim, case.params.features)
    return worst


def check_policy_record(
    port: Implementation,
    policy: Policy,
    record: BackwardRecord,
    dim: int | None = None,
    features: int | None = None,
) -> None:
    """Fail unless `record` shows what `policy_expectations` expects of `port` under `policy`
    (at sizes `dim`, `features`, where a stack's expectation depends on them)."""
    what = f"VJP under policy {policy.label}"
    if policy.name == "save_named" and record.tags is not None and SAVED_NAME not in record.tags:
        fail(
            port.name,
            what,
            f"WARNING: the policy names {SAVED_NAME!r}, which tags nothing in the block "
            f"(tags: {list(record.tags) or 'none'}): upstream then runs full remat silently",
        )
    try:
        expected = policy_expectations.expected(port, policy, dim, features)
    except policy_expectations.Contradiction as error:
        fail(port.name, what, str(error))
    whose = policy_expectations.source(port)
    if expected is None:
        name = policy_expectations.family(port) or "unknown"
        if policy_expectations.own(port) is not None:
            fail(
                port.name,
                what,
                f"the port declares expectations for its {name} instrument, but none under "
                f"{policy.label} (declare one per policy it expresses: docs/PROTOCOL.md, "
                "Expectations; docs/PORTING.md, Remat policies)",
            )
        fail(
            port.name,
            what,
            f"no expected saved set is written down for the {name} instrument under "
            f"{policy.label}: a port declares its own (instrument_family and expectations: "
            "docs/PROTOCOL.md, Expectations; docs/PORTING.md, Remat policies)",
        )
    held = f"; held to {whose}" if whose else ""
    unnamed = [t for t in record.kept if not t.role]
    if unnamed:
        listed = ", ".join(f"{t.shape} {t.dtype} ({t.note})" for t in unnamed)
        fail(port.name, what, f"{record.instrument} cannot name the role of: {listed}")
    roles, wanted = record.saved_roles, expected.roles
    if roles != wanted:
        fail(
            port.name,
            what,
            f"saves {{{', '.join(sorted(roles))}}}, expected "
            f"{{{', '.join(sorted(wanted))}}} ({expected.why}{held})",
        )
    check_count(
        port.name,
        what,
        "matmuls in backward",
        "backward_matmuls",
        record.backward_matmuls,
        expected.backward_matmuls,
        f" ({expected.why}{held})",
    )
    for tensor in record.kept:
        place = "host" if tensor.role in expected.host else "device"
        if tensor.memory_space and tensor.memory_space != place:
            fail(
                port.name,
                what,
                f"keeps {tensor.role} in {tensor.memory_space} memory, expected {place}{held}",
            )
    for role in expected.host:
        spaces = {t.memory_space for t in record.kept if t.role == role}
        if spaces != {"host"}:
            fail(port.name, what, f"keeps {role} in {spaces or 'no'} memory, expected host{held}")


#: (k) runs at most this many examples: each composes the region in up to three ways, and the
#: verdict turns on the shape (what is kept, how often the forward runs), not on the values.
COMPOSITION_EXAMPLES = 5


def prepare_composition(canonical: Implementation, case) -> dict[str, Any]:
    """The canonical port with its checkpoint (composing regions never changes the function):
    output and VJP, and the bounds."""
    grads = canonical.vjp(case.params, case.x, case.cotangent, checkpoint=True)
    return {
        "output": np.asarray(canonical.forward(case.params, case.x, checkpoint=True)),
        "grads": _grads(canonical, grads).as_dict(),
        "bound": forward_bound(case.params, case.x),
        "analysis": analyse_vjp(case.params, case.x, case.cotangent),
    }


def check_composition(port: Implementation, reference: dict, case) -> float:
    """(k) Under every composition case the port declares (its region once, twice, under a
    trainer's): output and VJP equal the canonical's, and its instrument shows the kept
    roles and the forward matmuls (in the forward pass, and again in the backward) that its
    stack declares, a declaration held to the composition rules first."""
    worst = 0.0
    plain = _record(
        port, "backward_record", port.backward_record(case.params, case.x, checkpoint=False)
    )
    for name in composition.CASES:
        if name not in composition.declared(port):
            continue
        argument, what = composition.Nesting(name), f"region composed: {name}"
        out = port.forward(case.params, case.x, checkpoint=argument)
        worst = max(
            worst,
            within(port.name, f"forward, {what}", out, reference["output"], reference["bound"]),
        )
        grads = _grads(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=argument))
        worst = max(
            worst,
            _compare_grads(
                port.name, f"VJP d/d{{}}, {what}", case, reference["analysis"],
                grads.as_dict(), reference["grads"],
            ),
        )  # fmt: skip
        record = _record(
            port, "backward_record", port.backward_record(case.params, case.x, checkpoint=argument)
        )
        composed_records.check_record(port, name, record, plain)
    return worst


def _evidence_cases(scope: str) -> st.SearchStrategy:
    return st.tuples(strategies.param_cases(scope), strategies.seeds())


def _bad_input_cases() -> list[tuple[BadInput, str]]:
    calls = [(bad, form) for bad in BAD_INPUTS for form in ("numpy", "native")]
    return calls + [(bad, "init") for bad in BAD_INIT_INPUTS]


PROPERTIES: tuple[Property, ...] = (
    Property("a", "init", "init params equal the canonical (2 ulp)", check_init,
             prepare_init, strategy=strategies.seeded_forward_cases, cost=5),
    Property("b", "forward", "forward from shared params equals the canonical", check_forward,
             prepare_forward, strategy=strategies.param_cases, cost=6),
    Property("c", "vjp", "VJP (params and x) equals the canonical", check_vjp,
             prepare_vjp, strategy=strategies.param_cases, cost=7),
    Property("d", "on_off", "checkpoint on equals off, within the port",
             check_checkpoint_is_transparent, prepare_on_off,
             strategy=strategies.param_cases, needs_canonical=False, share=ON_OFF_SHARE, cost=8),
    Property("e", "evidence", "the framework's instrument shows the checkpoint", check_evidence,
             strategy=_evidence_cases, needs_canonical=False, share=SHAPE_BOUND_SHARE, cost=3),
    Property("f", "end_to_end", "nn_checkpoint_forward equals the canonical", check_end_to_end,
             prepare_end_to_end, strategy=strategies.seeded_forward_cases, cost=4),
    Property("g", "bad_inputs", "bad inputs raise the contract's errors", check_bad_input,
             cases=_bad_input_cases, needs_canonical=False, cost=1),
    Property("h", "hygiene", "x unchanged, float32 (F,), repeatable", check_call_hygiene,
             strategy=strategies.seeded_forward_cases, needs_canonical=False,
             share=SHAPE_BOUND_SHARE, cost=2),
    Property("i", "precision", "as close to exact as float32 gets (median, large shapes)",
             check_precision, prepare_precision, strategy=strategies.precision_cases,
             needs_canonical=False, cost=9),
    Property("j", "policies", "every declared remat policy: canonical results, expected saves",
             check_policies, prepare_policies, strategy=policy_cases,
             examples=POLICY_EXAMPLES, cost=10),
    Property("k", "composition", "regions wrapped twice and under a trainer's: canonical "
             "results, declared saves and forward runs", check_composition,
             prepare_composition, strategy=policy_cases, examples=COMPOSITION_EXAMPLES,
             not_applicable=composed_records.not_expressible, checks_canonical=True, cost=11),
)  # fmt: skip

BY_ID = {p.id: p for p in PROPERTIES}
BY_KEY = {p.key: p for p in PROPERTIES}
