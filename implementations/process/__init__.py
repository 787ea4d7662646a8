"""Ports in any language: `ProcessPort` runs a program that speaks docs/PROTOCOL.md.

A process port registers through the entry-point group
`remat_conformance.implementations` with the value `exec:<command line>`;
no Python is written for it. The built-in one is `tfjs` (TensorFlow.js, in
`tfjs/`). Imports numpy and the standard library only.
"""

from __future__ import annotations

from .adapter import (
    ProcessPort,
    ProcessPortCrashed,
    ProcessPortError,
    ProcessPortTimeout,
    ProcessPortUnavailable,
    expand_command,
)
from .wire import PROTOCOL_VERSION, ProtocolViolation

__all__ = [
    "PROTOCOL_VERSION",
    "ProcessPort",
    "ProcessPortCrashed",
    "ProcessPortError",
    "ProcessPortTimeout",
    "ProcessPortUnavailable",
    "ProtocolViolation",
    "expand_command",
]
