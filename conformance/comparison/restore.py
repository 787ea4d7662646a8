"""A `Comparison` back from its JSON (`compare --json`), for the report page: its tables are
the terminal's own (`render`), built from the same data."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..tables.numbers import number
from .composition_matrix import CompositionCell
from .model import Bits, Comparison, Diff, PortComparison, Residuals
from .policy_matrix import PolicyCell
from .state_matrix import StateCell


def _known(cls: type, found: dict[str, Any]) -> dict[str, Any]:
    # Only the fields this version knows: a newer report's extra fields are left out.
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in found.items() if k in names}


def _diff(found: dict[str, Any] | None) -> Diff | None:
    if not found:
        return None
    return Diff(*(number(found.get(k)) or 0.0 for k in ("max_abs", "bound", "worst_ratio")))


def _bits(found: dict[str, Any]) -> Bits:
    return Bits(number(found.get("bits")) or 0.0, number(found.get("ratio")) or 0.0)


def _row(found: dict[str, Any]) -> PortComparison:
    row = PortComparison(**_known(PortComparison, found))
    row.output, row.exercise = _diff(found.get("output")), _diff(found.get("exercise"))
    row.gradients = {k: _diff(v) for k, v in (found.get("gradients") or {}).items() if v}
    row.precision = {k: _bits(v) for k, v in (found.get("precision") or {}).items()}
    row.residuals = {
        k: Residuals(**_known(Residuals, v)) for k, v in (found.get("residuals") or {}).items()
    }
    row.policies = [PolicyCell(**_known(PolicyCell, c)) for c in found.get("policies") or []]
    row.compositions = [
        CompositionCell(**_known(CompositionCell, c)) for c in found.get("compositions") or []
    ]
    row.states = [StateCell(**_known(StateCell, c)) for c in found.get("states") or []]
    for key in ("warm_forward_seconds", "warm_vjp_seconds"):
        setattr(row, key, number(found.get(key)))
    row.warm_spread = {k: number(v) for k, v in (found.get("warm_spread") or {}).items()}
    return row


def from_json(data: dict[str, Any]) -> Comparison:
    """The comparison `data` (`Comparison.to_json`) holds."""
    comparison = Comparison(**_known(Comparison, data))
    comparison.ports = [_row(found) for found in data.get("ports") or []]
    return comparison
