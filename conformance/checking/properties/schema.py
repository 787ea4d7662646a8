"""The declarations a property reads: what a port's class (or a process port's hello), or its
stack's folder, writes down for it. Each property lists its own (`Property.reads`), typed;
tests/core/checking/test_property_modules.py holds the list to the code that reads them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Where a declaration is written: on the port ("port": its class's attribute, or the field
#: of the same name in a process port's hello) or in its stack's folder ("stack": the field
#: of the `implementations.expectations.Expectations` its manifest names).
PLACES = ("port", "stack")


@dataclass(frozen=True)
class Declaration:
    """One declaration a property reads.

    - `name`: the attribute, or the `Expectations` field.
    - `where`: one of `PLACES`.
    - `type`: what it must be (`Mapping[str, Composed]`), for people and for checks.
    - `meaning`: one line.
    - `reader`: the function the property reads it through, where its own module does not
      read it by name.
    """

    name: str
    where: str
    type: Any
    meaning: str
    reader: Callable[..., Any] | None = None

    def __post_init__(self):
        if self.where not in PLACES:
            raise ValueError(f"where must be one of {PLACES}, got {self.where!r}")


def on_port(name: str, type: Any, meaning: str, reader: Callable | None = None) -> Declaration:
    """A declaration on the port's class (or in its hello)."""
    return Declaration(name, "port", type, meaning, reader)


def in_stack(name: str, type: Any, meaning: str, reader: Callable | None = None) -> Declaration:
    """A declaration in the stack's folder (its `Expectations`)."""
    return Declaration(name, "stack", type, meaning, reader)
