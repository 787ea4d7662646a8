"""The declarations a property reads: what a port's class (or a process port's hello), or its
stack's folder, writes down for it. Each property lists its own (`Property.reads`), typed;
tests/core/checking/test_property_modules.py holds the list to the code that reads them."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping, Sequence
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
    - `type`: what it must be (`Mapping[str, Composed]`), for people and for `conforms`.
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


def stack_tables(field: str, keyed_by: str) -> dict[str, dict[str, Any]]:
    """Every stack's `Expectations.<field>` merged: key (a `keyed_by`, a family or a port) ->
    its table; `ValueError` where two stacks declare one key."""
    from implementations import manifests  # the manifests are read where a table is asked for

    merged: dict[str, dict[str, Any]] = {}
    for manifest in manifests.manifests():
        if not manifest.expectations:
            continue
        for key, table in getattr(manifests.resolve(manifest.expectations), field).items():
            if key in merged:
                raise ValueError(f"{keyed_by} {key!r} declares {field} twice")
            merged[key] = dict(table)
    return merged


def own_table(port: Any, attribute: str) -> Mapping[str, Any] | None:
    """The non-empty mapping `port` declares itself as `attribute`, or None."""
    table = getattr(port, attribute, None)
    return table if isinstance(table, Mapping) and table else None


def conforms(value: Any, kind: Any) -> bool:
    """Whether `value` is of `kind`: a class, `Any`, a union, `Callable[...]`, `Mapping[K, V]`,
    `Sequence[T]` (not a string) or `tuple[T, ...]`, checked through (`TypeError` naming
    `kind` for any other form: a declaration's type is one this can check)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in args)
    if origin is Callable or kind is Callable:
        return callable(value)
    if origin is Mapping or origin is dict:
        key, item = args or (Any, Any)
        return isinstance(value, Mapping) and all(
            conforms(k, key) and conforms(v, item) for k, v in value.items()
        )
    if origin in (Sequence, tuple):
        item = args[0] if args else Any
        if origin is tuple and args and (len(args) != 2 or args[1] is not Ellipsis):
            raise TypeError(f"kind {kind!r}: only tuple[T, ...] is checked")
        return (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and all(conforms(v, item) for v in value)
        )
    if origin is None and isinstance(kind, type):
        return isinstance(value, kind)
    raise TypeError(f"kind {kind!r} is not a form conforms checks")
