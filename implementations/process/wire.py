"""The protocol's values on the wire (docs/PROTOCOL.md): arrays as base64 float32, integers as
decimal strings, records and errors. Imports numpy and the standard library only."""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

import numpy as np

from ..contract import MEASURED_BY_PORT, BackwardRecord, SavedTensor

#: The newest protocol the adapter speaks, and every one it speaks (hello negotiates).
PROTOCOL_VERSION = 3
PROTOCOL_VERSIONS = (1, 2, 3)
_LITTLE_F32 = np.dtype("<f4")


class ProtocolViolation(RuntimeError):
    """A process port's answer that breaks docs/PROTOCOL.md; the message names the request."""


def encode_array(array: np.ndarray) -> dict[str, Any]:
    """A float32 array as `{"dtype", "shape", "data"}` (row-major, little-endian, base64)."""
    # np.require keeps a 0-d array 0-d (np.ascontiguousarray makes it (1,)).
    data = np.require(np.asarray(array, dtype=_LITTLE_F32), requirements="C")
    return {
        "dtype": "float32",
        "shape": list(data.shape),
        "data": base64.b64encode(data.tobytes()).decode("ascii"),
    }


def decode_array(value: Any, what: str) -> np.ndarray:
    """An array object from a response as a fresh float32 numpy array; `ProtocolViolation`
    naming `what` when it is malformed."""
    if not isinstance(value, dict):
        raise ProtocolViolation(f"{what} must be an array object, got {type(value).__name__}")
    if value.get("dtype") != "float32":
        raise ProtocolViolation(f"{what}: dtype must be 'float32', got {value.get('dtype')!r}")
    shape = value.get("shape")
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        raise ProtocolViolation(f"{what}: shape must be a list of non-negative ints, got {shape!r}")
    try:
        raw = base64.b64decode(value.get("data", ""), validate=True)
    except (binascii.Error, TypeError, ValueError) as error:
        raise ProtocolViolation(f"{what}: data is not base64 ({error})") from None
    if len(raw) != 4 * math.prod(shape):
        raise ProtocolViolation(
            f"{what}: data holds {len(raw)} bytes, shape {shape} needs {4 * math.prod(shape)}"
        )
    return np.frombuffer(raw, _LITTLE_F32).astype(np.float32).reshape(shape)


def field(result: dict[str, Any], key: str, what: str) -> Any:
    """`result[key]`, or `ProtocolViolation` naming the missing field."""
    if key not in result:
        raise ProtocolViolation(f"{what}: the result has no field {key!r}")
    return result[key]


def decode_saved(items: Any) -> tuple[SavedTensor, ...]:
    """A record's `saved` list as `SavedTensor`s; raises KeyError, TypeError or ValueError
    on a malformed item (the caller names the request)."""
    return tuple(
        SavedTensor(
            shape=tuple(int(n) for n in item["shape"]),
            dtype=str(item["dtype"]),
            origin=str(item["origin"]),
            note=str(item.get("note", "")),
            role=str(item.get("role", "")),  # optional: "" where the port cannot tell
            memory_space=str(item.get("memory_space") or ""),  # optional: "device" or "host"
        )
        for item in items
    )


def decode_record(result: Any, what: str) -> BackwardRecord:
    """An evidence record as a `contract.BackwardRecord`, measured by the port itself (whatever
    the record says: the suite cannot see inside the port's process)."""
    if not isinstance(result, dict):
        raise ProtocolViolation(f"{what}: the record must be an object")
    try:
        saved = decode_saved(field(result, "saved", what))
        recomputed = {str(k): int(v) for k, v in field(result, "recomputed", what).items()}
        regions = result.get("checkpoint_regions")
        counts = {}
        for key in ("backward_matmuls", "forward_matmuls"):  # optional: None where not counted
            count = result.get(key)
            if count is not None and (isinstance(count, bool) or int(count) != count):
                raise ValueError(f"{key} must be an integer, got {count!r}")
            counts[key] = None if count is None else int(count)
        return BackwardRecord(
            instrument=str(field(result, "instrument", what)),
            saved=saved,
            recomputed=recomputed,
            checkpoint_regions=None if regions is None else int(regions),
            backward_matmuls=counts["backward_matmuls"],
            forward_matmuls=counts["forward_matmuls"],
            measured_by=MEASURED_BY_PORT,
        )
    except ProtocolViolation:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        problem = f"{type(error).__name__}: {error}"
        raise ProtocolViolation(f"{what}: malformed record ({problem})") from None
