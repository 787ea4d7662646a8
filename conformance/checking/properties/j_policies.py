"""(j) Under every remat policy the port declares: the canonical's results, and the saved
roles and backward matmuls its instrument family's expectations write down."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from implementations.contract import BackwardRecord, Implementation
from implementations.expectations import Entry, Expected, contradictions
from implementations.policies import SAVED_NAME, Policy, declared
from implementations.stacks import Port

from .. import policy_expectations, strategies
from ..checks import check_count, fail
from ..tolerance import analyse_vjp, forward_bound
from .schema import in_stack, on_port
from .shared import grads_of, record_of, values_under
from .spec import Property

#: Examples of (j) per run: each runs every declared policy (a compile per policy and
#: shape on a compiling stack), and what it saves depends on the shape alone.
POLICY_EXAMPLES = 3


#: The budget (j) runs for a declared `budget`: 0, whose answer is exact (recompute all it
#: can, as full remat: a budget that is ignored shows there). Within (0, 1] the answer is the
#: framework's own trade-off, which hangs on the sizes: `bench --policies` measures it.
BUDGET_CHECKED = Policy("budget", 0.0)


# The (j) reader of the declarations (`READS`): the port's own table first, held to the
# policy vocabulary (`implementations.expectations.contradictions`), then its family's.


class Contradiction(ValueError):
    """A port's own expectations contradict the policy vocabulary."""


def tables() -> dict[str, dict[str, Any]]:
    """Every family the suite's stacks declare: family -> policy label or name -> `Expected`
    (or a function of the sizes giving one)."""
    merged: dict[str, dict[str, Any]] = {}
    for _, declaration in policy_expectations.declared():
        for name, table in declaration.families.items():
            if name in merged:
                raise ValueError(f"instrument family {name!r} is declared twice")
            merged[name] = dict(table)
    return merged


def check_own(port: Any) -> None:
    """Raise `Contradiction` where the port's own expectations contradict the vocabulary."""
    table = policy_expectations.own(port)
    if table is None:
        return
    problems = contradictions(table, (4, 7))
    if problems:
        name = policy_expectations.family(port) or "unknown"
        raise Contradiction(
            f"the expectations it declares for the {name} instrument contradict the policy "
            f"vocabulary: {'; '.join(problems)}"
        )


def expected(
    port: Any, policy: Policy, dim: int | None = None, features: int | None = None
) -> Expected | None:
    """What `port`'s instrument must show under `policy` (its label, e.g. `budget(0)`, first,
    then its name) at sizes `dim`, `features`; None where nothing is written down. The port's
    own declaration first (`Contradiction` where it contradicts the vocabulary), then its
    family's table. An entry may be a function of the sizes."""
    table = policy_expectations.own(port)
    if table is not None:
        check_own(port)
    else:
        table = tables().get(policy_expectations.family(port), {})
    entry = table.get(policy.label) or table.get(policy.name)
    return entry(dim, features) if callable(entry) else entry


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
        by_policy[policy.label] = {"output": out, "grads": grads_of(canonical, grads).as_dict()}
    return {
        "policies": by_policy,
        "bound": forward_bound(case.params, case.x),
        "analysis": analyse_vjp(case.params, case.x, case.cotangent),
    }


def check_policies(port: Implementation, reference: dict, case) -> float:
    """(j) Under every remat policy the port declares: output and VJP equal the canonical's
    under the same policy, and its instrument shows the saved roles and backward matmuls
    that its stack (or the port itself) writes down (`expected`)."""
    worst = 0.0
    for policy in _policies_of(port):
        argument, what = checkpoint_argument(port, policy), f"policy {policy.label}"
        # A policy the canonical cannot express (budget) is held to its no-remat run:
        # every applied policy gives the no-remat gradients.
        canonical = reference["policies"].get(policy.label) or reference["policies"]["none"]
        worst = max(worst, values_under(port, argument, what, case, canonical, reference))
        record = record_of(
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
    """Fail unless `record` shows what `expected` gives for `port` under `policy`
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
        entry = expected(port, policy, dim, features)
    except Contradiction as error:
        fail(port.name, what, str(error))
    whose = policy_expectations.source(port)
    if entry is None:
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
    roles, wanted = record.saved_roles, entry.roles
    if roles != wanted:
        fail(
            port.name,
            what,
            f"saves {{{', '.join(sorted(roles))}}}, expected "
            f"{{{', '.join(sorted(wanted))}}} ({entry.why}{held})"
            + "".join(f"; {unseen}" for unseen in record.not_observable),
        )
    check_count(
        port.name,
        what,
        "matmuls in backward",
        "backward_matmuls",
        record.backward_matmuls,
        entry.backward_matmuls,
        f" ({entry.why}{held})",
    )
    for tensor in record.kept:
        place = "host" if tensor.role in entry.host else "device"
        if tensor.memory_space and tensor.memory_space != place:
            fail(
                port.name,
                what,
                f"keeps {tensor.role} in {tensor.memory_space} memory, expected {place}{held}",
            )
    for role in entry.host:
        spaces = {t.memory_space for t in record.kept if t.role == role}
        if spaces != {"host"}:
            fail(port.name, what, f"keeps {role} in {spaces or 'no'} memory, expected host{held}")


#: What (j) reads beyond the contract: the policies a port expresses, and what its instrument
#: must show under each (its own declaration first, then its family's in its stack's folder).
READS = (
    on_port("policies", Mapping[str, str], "policy name -> native spelling", declared),
    on_port("instrument_family", str, "whose expectations hold (default: the manifest's)",
            policy_expectations.family),
    on_port("expectations", Mapping[str, Entry],
            "the port's own: policy label -> Expected, or a function of the sizes giving one",
            policy_expectations.own),
    in_stack("families", Mapping[str, Mapping[str, Entry]],
             "family -> policy label -> Expected (or a function of the sizes), in the stack's "
             "expectations.py",
             tables),
)  # fmt: skip


#: A stack's mutant that declares `killed_by="j"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS = ("wire_ignores_policy",)

PROPERTY = Property(
    "j", "policies", "every declared remat policy: canonical results, expected saves",
    check_policies, prepare_policies, strategy=strategies.policy_cases,
    examples=POLICY_EXAMPLES, cost=100, reads=READS, mutants=MUTANTS,
)  # fmt: skip
