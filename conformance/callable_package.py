"""Make a package callable: `conformance.compare(...)` is both a package and the API function.

The import system sets a subpackage as an attribute of its parent once it is
imported, so a function of the same name in `conformance/__init__.py` would be
replaced by the package. Instead the package's module object gets a class
with `__call__` (and the function's signature, for `help` and `inspect`).
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable
from typing import Any


def make_callable(module_name: str, function: Callable[..., Any]) -> None:
    """Calling module `module_name` calls `function` (its signature and docstring too)."""

    class CallablePackage(types.ModuleType):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)

    CallablePackage.__call__.__doc__ = function.__doc__
    module = sys.modules[module_name]
    module.__class__ = CallablePackage
    module.__signature__ = inspect.signature(function)
