"""`lazy_exports`: a stack package's names, imported on first use. Imports nothing.

A stack's package (`implementations.stacks.torch`) offers its framework's
pieces by name (`from implementations.stacks.torch import TorchPort`), but
importing the package must not import the framework: the core reads each
stack's `manifest` (a submodule) without loading any framework. So the
package's `__init__` lists where each name lives, in one table, and
`lazy_exports` derives the rest from it: a module-level `__getattr__` (PEP 562)
that imports a name the first time it is asked for, `__dir__`, and `__all__`.
`arrays_exports` is the part of that table that every stack's `.arrays` module fills alike.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """`(__getattr__, __dir__, __all__)` for `package`: each name of `names` (name -> its
    submodule, relative: `".port"`) is imported from its submodule when first asked for, then
    kept; `__all__` is the table's names, sorted.

    `package` may be a plain module too (a stack's `bench`, whose `bench --schedules` names
    live in `.schedules`, which imports it): the submodule is then its sibling, as an import
    statement in that module would find it."""
    for name, where in names.items():
        if not (name.isidentifier() and where.startswith(".")):
            raise ValueError(
                f"names: {name!r} -> {where!r} in {package}: expected an identifier -> "
                'a relative submodule (".port")'
            )

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # A package's __package__ is itself; a plain module's, the package it is in.
        module = importlib.import_module(where, sys.modules[package].__package__)
        value = module if where.rsplit(".", 1)[-1] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__, sorted(names)


#: What a stack's `.arrays` module offers when it does both of `Stack`'s array duties (host
#: arrays in and out, the matmul precision) and checks an input.
ARRAYS = (
    "as_input",
    "from_host_array",
    "matmul_precision",
    "pin_matmul_precision",
    "to_host_array",
)


def arrays_exports(*more: str) -> dict[str, str]:
    """The lazy table's rows for `ARRAYS` and `more`, all in the stack's `.arrays` module."""
    return dict.fromkeys((*ARRAYS, *more), ".arrays")
