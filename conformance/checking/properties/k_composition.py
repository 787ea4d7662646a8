"""(k) Under every composition case the port declares (its region once, twice, under a
trainer's): the canonical's results, and the kept roles and forward matmuls its stack
declares.

The declarations it reads (`READS`), in one form (`implementations.composition.Composed`), as
for the policies: the port's own (a class's `composition_expectations`, case -> `Composed`),
else its instrument family's table in its stack's `expectations.py`
(`Expectations.compositions`). Either is held to the composition rules
(`composition.contradictions`) before it is used."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from implementations import composition
from implementations.composition import Composed
from implementations.contract import BackwardRecord, Implementation

from .. import policy_expectations, strategies
from ..checks import check_count, fail
from ..tolerance import analyse_vjp, forward_bound
from .schema import in_stack, on_port, own_table, stack_tables
from .shared import grads_of, record_of, values_under
from .spec import Property

#: Where a record's reruns come from (`rerun_matmuls`), for a message that finds none.
RERUN_FIELDS = "rerun_matmuls, nor backward_matmuls both with the checkpoint and without"


@functools.cache
def tables() -> dict[str, dict[str, Composed]]:
    """Every family's composition table the suite's stacks declare: family -> case ->
    `Composed`."""
    return stack_tables("compositions", "instrument family")


def own(port: Any) -> Mapping[str, Composed] | None:
    """The composition expectations `port` declares itself, or None."""
    return own_table(port, "composition_expectations")


def table_of(port: Any) -> tuple[dict[str, Composed], str]:
    """`port`'s composition table and whose it is, in words for reports."""
    name = policy_expectations.family(port) or "unknown"
    mine = own(port)
    if mine is not None:
        return dict(mine), f"the {name} instrument's, declared by the port itself"
    found = tables().get(name)
    if found is None:
        return {}, ""
    return found, f"the {name} instrument's, declared by the suite (its stack's expectations.py)"


def not_expressible(port: Any) -> str | None:
    """Why (k) has nothing to check on `port` (no nested case declared), or None."""
    expressed = composition.declared(port)
    if any(case in expressed for case in composition.NESTED):
        return None
    reasons = composition.not_composable(port)
    return "not expressible: " + "; ".join(
        f"{case}: {reasons[case]}" for case in composition.NESTED
    )


def rerun_matmuls(record: BackwardRecord, plain: BackwardRecord) -> int | None:
    """The forward matmuls `record`'s backward pass runs again: as its instrument counts them
    apart, else its matmuls beyond the gradient's own, which `plain` (the same port without a
    checkpoint) runs."""
    if record.rerun_matmuls is not None:
        return record.rerun_matmuls
    if record.backward_matmuls is None or plain.backward_matmuls is None:
        return None
    return record.backward_matmuls - plain.backward_matmuls


def check_record(
    port: Any, case: str, record: BackwardRecord, plain: BackwardRecord
) -> dict[str, Any]:
    """Fail unless `record` (the port's VJP under `case`) shows what the port's table says;
    returns the measured row (kept roles and bytes, forward matmuls, reruns) for reports."""
    what = f"VJP with its region composed: {case}"
    table, whose = table_of(port)
    problems = composition.contradictions(table)
    if problems:
        fail(port.name, what, f"its composition table breaks a rule: {'; '.join(problems)}")
    expected = table.get(case)
    if expected is None:
        fail(
            port.name,
            what,
            f"no composition expectation for {case} is written down for the "
            f"{policy_expectations.family(port) or 'unknown'} instrument (docs/PORTING.md, "
            "Composition)",
        )
    held = f" ({expected.why}; held to {whose})"
    reruns = rerun_matmuls(record, plain)
    measured = {
        "roles": sorted(record.saved_roles),
        "saved_bytes": record.saved_bytes,
        "forward_matmuls": record.forward_matmuls,
        "rerun_matmuls": reruns,
    }
    regions = record.checkpoint_regions
    if case in composition.NESTED and regions is not None and regions < 2:
        # The framework flattened the nesting away: the inner region is gone.
        fail(
            port.name,
            what,
            f"enters {regions} checkpoint region(s): the inner region was dropped (declare "
            f"{case} not composable, with the upstream reason, if the framework cannot nest)",
        )
    if record.saved_roles != expected.roles:
        fail(
            port.name,
            what,
            f"saves {{{', '.join(sorted(record.saved_roles))}}}, expected "
            f"{{{', '.join(sorted(expected.roles))}}}{held}",
        )
    for label, field, seen, wanted in (
        (
            "forward matmuls in the forward pass",
            "forward_matmuls",
            record.forward_matmuls,
            expected.forward_matmuls,
        ),
        (
            "forward matmuls again in the backward pass",
            RERUN_FIELDS,
            reruns,
            expected.rerun_matmuls,
        ),
    ):
        check_count(port.name, what, label, field, seen, wanted, held)
    return measured


#: (k) runs at most this many examples: each composes the region in up to three ways, and the
#: verdict turns on the shape (what is kept, how often the forward runs), not on the values.
COMPOSITION_EXAMPLES = 5


def prepare_composition(canonical: Implementation, case) -> dict[str, Any]:
    """The canonical port with its checkpoint (composing regions never changes the function):
    output and VJP, and the bounds."""
    grads = canonical.vjp(case.params, case.x, case.cotangent, checkpoint=True)
    return {
        "output": np.asarray(canonical.forward(case.params, case.x, checkpoint=True)),
        "grads": grads_of(canonical, grads).as_dict(),
        "bound": forward_bound(case.params, case.x),
        "analysis": analyse_vjp(case.params, case.x, case.cotangent),
    }


def check_composition(port: Implementation, reference: dict, case) -> float:
    """(k) Under every composition case the port declares (its region once, twice, under a
    trainer's): output and VJP equal the canonical's, and its instrument shows the kept
    roles and the forward matmuls (in the forward pass, and again in the backward) that its
    stack declares, a declaration held to the composition rules first."""
    worst = 0.0
    plain = record_of(
        port, "backward_record", port.backward_record(case.params, case.x, checkpoint=False)
    )
    for name in composition.CASES:
        if name not in composition.declared(port):
            continue
        argument, what = composition.Nesting(name), f"region composed: {name}"
        worst = max(worst, values_under(port, argument, what, case, reference, reference))
        record = record_of(
            port, "backward_record", port.backward_record(case.params, case.x, checkpoint=argument)
        )
        check_record(port, name, record, plain)
    return worst


#: What (k) reads beyond the contract: the cases a port expresses, and what its instrument
#: must show under each (its own declaration first, then its family's in its stack's folder).
READS = (
    on_port("compositions", Mapping[str, str], "case -> native spelling", composition.declared),
    on_port("not_composable", Mapping[str, str], "case -> one-line reason",
            composition.not_composable),
    on_port("instrument_family", str, "whose table holds (default: the manifest's)",
            policy_expectations.family),
    on_port("composition_expectations", Mapping[str, Composed],
            "the port's own: case -> Composed (an outside port's)", own),
    in_stack("compositions", Mapping[str, Mapping[str, Composed]],
             "family -> case -> Composed, in the stack's expectations.py", tables),
)  # fmt: skip


#: A stack's mutant that declares `killed_by="k"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "k", "composition", "regions wrapped twice and under a trainer's: canonical "
    "results, declared saves and forward runs", check_composition,
    prepare_composition, strategy=strategies.policy_cases, examples=COMPOSITION_EXAMPLES,
    not_applicable=not_expressible, checks_canonical=True, cost=110, reads=READS,
    mutants=MUTANTS,
)  # fmt: skip
