"""What a port is handed, sealed: arrays whose write flag cannot be turned back on.

The contract hands a port its params, x and cotangent read-only. A read-only array that owns
its memory can be made writable again (`setflags(write=True)`), and the arrays of a case
read from the example bank are views of a writable buffer. So each case is handed to the
port as a copy whose arrays are views of an immutable `bytes` object: numpy refuses to make
such an array writable, so no port can change what another port, or the check itself, reads
next. (The (h) property checks the other way round, with arrays a port could make writable,
and names the array a port writes: `checking.properties.h_hygiene.check_no_writes`.)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

#: What numpy says when something writes into, or unseals, a sealed array.
READ_ONLY_WORDS = ("read-only", "WRITEABLE")


def sealed_array(array: np.ndarray) -> np.ndarray:
    """A copy of `array` that cannot be made writable (its base is a `bytes` object). An
    array of objects, or not C-contiguous (a bad input may be one on purpose), is left as is."""
    if array.dtype.hasobject or not array.flags.c_contiguous:
        return array
    return np.frombuffer(array.tobytes(), dtype=array.dtype).reshape(array.shape)


def sealed(value: Any) -> Any:
    """`value` with every array in it (in dataclasses, tuples, lists, dicts) sealed; a
    dataclass is rebuilt without its `__init__`, as the cache rebuilds it."""
    if isinstance(value, np.ndarray):
        return sealed_array(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        copy = object.__new__(type(value))
        for field in dataclasses.fields(value):
            object.__setattr__(copy, field.name, sealed(getattr(value, field.name)))
        if hasattr(value, "__dict__"):  # what a dataclass keeps beside its fields (caches)
            for name, item in vars(value).items():
                if name not in vars(copy):
                    object.__setattr__(copy, name, sealed(item))
        return copy
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(sealed(item) for item in value)
    if isinstance(value, list):
        return [sealed(item) for item in value]
    if isinstance(value, dict):
        return {key: sealed(item) for key, item in value.items()}
    return value


def is_read_only_error(error: BaseException) -> bool:
    """Whether `error` is numpy refusing a write into (or the unsealing of) an array."""
    return isinstance(error, ValueError) and any(w in str(error) for w in READ_ONLY_WORDS)
