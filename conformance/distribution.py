"""This package as installed: its distribution's name and version."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed

DISTRIBUTION = "remat-conformance"


def version() -> str:
    """This package's version, from its metadata (or "unknown" in a tree never installed)."""
    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"
