"""A stack's test folder skips, with the reason, where its framework is not installed.

Each folder's conftest.py binds `pytest_pycollect_makemodule` to `skip_without(...)`.
A collection hook rather than `pytest.importorskip` in the conftest itself: pytest
loads a conftest early when its folder is named on the command line
(`pytest tests/torch`), and a skip raised there is an error, not a skip.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from pathlib import Path

import pytest


class StackMissing(pytest.File):
    """A test file whose stack is not installed: collected as one skip with the reason."""

    reason: str = ""

    def collect(self):
        pytest.skip(self.reason)


def skip_without(module: str, stack: str, extra: str) -> Callable:
    """The hook: each test file of the folder becomes a skip when `module` cannot be found."""

    @functools.cache
    def missing() -> str | None:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            return f"{stack} is not installed ({error}); pip install -e '.[{extra}]'"
        return None

    def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector):
        reason = missing()
        if reason is None:
            return None  # the ordinary Module collector
        file = StackMissing.from_parent(parent, path=module_path)
        file.reason = reason
        return file

    return pytest_pycollect_makemodule
