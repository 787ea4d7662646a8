"""`refuse_after`: a stack's framework refused, by name, where a framework it cannot follow
in one process is loaded already. Imports the project's contract only.

Two frameworks that ship the same native library (oneDNN) can crash or fail to link when
one is imported after the other. The stack's `loaded` module calls this before its import,
so that the registry reports the port as loading in a process of its own instead.
"""

from __future__ import annotations

import importlib.util
import sys

from ..contract import StackUnavailable


def refuse_after(earlier: str, package: str, why: str) -> None:
    """Raise `StackUnavailable(why)` where `earlier` is imported and `package` is not yet.

    Only if `package` is installed: a missing one is "not installed" (its import says so),
    never "loads in a process of its own"."""
    if (
        sys.modules.get(earlier) is not None
        and package not in sys.modules
        and importlib.util.find_spec(package) is not None
    ):
        raise StackUnavailable(why)
