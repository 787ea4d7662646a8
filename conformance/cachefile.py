"""The bank's file format: data only, checked before it is believed.

A cache directory may be shared, restored from another machine's CI cache,
or written by anyone, so a file in it is never code: no pickle. A value is
split into JSON (its structure, every scalar exactly) and numpy arrays.
An entry (`<key>.entry`) is three parts, one after the other:

1. the sha256 of parts 2 and 3, in hex, and a newline: checked before
   anything else is read, so a flipped bit anywhere in the file is found
   (a zip's own CRC misses flips in its headers, and a file of wrong but
   well-formed numbers would be believed);
2. one line of JSON: the format, the entry's key (a hash of the code and
   versions that made it, `conformance.bank`) and the encoded value;
3. an `.npz` of the arrays the value holds (`a0`, `a1`, ...), read with
   `allow_pickle=False`.

The encoding is explicit and lossless: floats by their IEEE bits (-0.0,
subnormals, infinities and NaN payloads survive), ints of any size,
tuples as tuples, numpy scalars with their dtype, and only the dataclasses
named in `_CLASSES`, rebuilt field by field (as pickle did, without running
their `__init__`). Anything else cannot be written (`CacheFileError`), so
the value is used uncached rather than stored wrongly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import struct
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

FORMAT = 1


class CacheFileError(Exception):
    """A file that is not a valid, verified entry, or a value this format cannot hold."""


def _classes() -> dict[str, type]:
    # Imported here: this module is imported by the bank before the strategies exist.
    from implementations.contract import Grads, Params

    from . import precision, strategies, tolerance

    found = [
        Params,
        Grads,
        strategies.ExerciseCase,
        strategies.ParamCase,
        strategies.PrecisionCase,
        tolerance.ForwardAnalysis,
        tolerance.VJPAnalysis,
        precision.Scales,
        precision.Reference,
        precision.Result,
    ]
    return {f"{c.__module__}.{c.__qualname__}": c for c in found}


_CLASSES: dict[str, type] = {}


def classes() -> dict[str, type]:
    """The dataclasses a cache file may hold, by qualified name."""
    if not _CLASSES:
        _CLASSES.update(_classes())
    return _CLASSES


# ---------------------------------------------------------------------------
# Values <-> (JSON, arrays)
# ---------------------------------------------------------------------------


def encode(value: Any, arrays: list[np.ndarray]) -> Any:
    """`value` as JSON-able data; its arrays are appended to `arrays` and named by index."""
    if isinstance(value, np.generic):  # first: np.float64 is a float, and must stay numpy's
        return {"scalar": encode(np.asarray(value), arrays)}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):  # after bool; JSON would hold it, but say what it is
        return {"int": str(value)}
    if isinstance(value, float):
        return {"float": struct.pack("<d", value).hex()}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or value.dtype.fields is not None:
            raise CacheFileError(f"an array of dtype {value.dtype} is not data")
        arrays.append(value)
        return {"array": len(arrays) - 1}
    if isinstance(value, tuple):
        return {"tuple": [encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return {"list": [encode(v, arrays) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k, arrays), encode(v, arrays)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = f"{type(value).__module__}.{type(value).__qualname__}"
        if classes().get(name) is not type(value):
            raise CacheFileError(f"{name} is not a class the cache may hold")
        fields = {f.name: encode(getattr(value, f.name), arrays) for f in dataclasses.fields(value)}
        return {"class": name, "fields": fields}
    raise CacheFileError(f"a {type(value).__name__} cannot be kept in the cache")


def decode(data: Any, arrays: list[np.ndarray]) -> Any:
    """The value `encode` made `data` from."""
    if data is None or isinstance(data, (bool, str)):
        return data
    if not isinstance(data, dict) or not data:
        raise CacheFileError(f"unexpected {type(data).__name__} in the file's structure")
    tag = next(iter(data))
    decoders: dict[str, Callable[[Any], Any]] = {
        "int": lambda text: int(text),
        "float": lambda text: struct.unpack("<d", bytes.fromhex(text))[0],
        "array": lambda index: arrays[index],
        "scalar": lambda inner: decode(inner, arrays)[()],
        "tuple": lambda items: tuple(decode(v, arrays) for v in items),
        "list": lambda items: [decode(v, arrays) for v in items],
        "dict": lambda items: {decode(k, arrays): decode(v, arrays) for k, v in items},
        "class": lambda name: _rebuild(name, data.get("fields"), arrays),
    }
    if tag not in decoders:
        raise CacheFileError(f"unknown tag {tag!r} in the file's structure")
    try:
        return decoders[tag](data[tag])
    except CacheFileError:
        raise
    except (TypeError, ValueError, IndexError, KeyError, struct.error) as error:
        raise CacheFileError(f"malformed {tag!r} entry: {error}") from error


def _rebuild(name: str, fields: Any, arrays: list[np.ndarray]) -> Any:
    cls = classes().get(name)
    if cls is None:
        raise CacheFileError(f"{name!r} is not a class the cache may hold")
    expected = {f.name for f in dataclasses.fields(cls)}
    if not isinstance(fields, dict) or set(fields) != expected:
        raise CacheFileError(f"{name}: fields {sorted(fields or ())} are not {sorted(expected)}")
    instance = object.__new__(cls)  # as pickle did: the fields as they were, no __init__
    for key, value in fields.items():
        object.__setattr__(instance, key, decode(value, arrays))
    return instance


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


def fingerprint(value: Any) -> bytes:
    """A digest of `value`'s exact content (for keys that depend on a value)."""
    arrays: list[np.ndarray] = []
    meta = json.dumps(encode(value, arrays), separators=(",", ":")).encode()
    return _checksum(meta, arrays).encode()


def dump(file, key: str, value: Any) -> None:
    """Write `value` to the binary `file` as an entry for `key`."""
    arrays: list[np.ndarray] = []
    structure = encode(value, arrays)
    meta = json.dumps({"format": FORMAT, "key": key, "value": structure}).encode()
    archive = io.BytesIO()
    np.savez(archive, **{f"a{i}": a for i, a in enumerate(arrays)})
    body = meta + b"\n" + archive.getvalue()
    file.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def load(data: bytes, key: str) -> Any:
    """The value in an entry's bytes, if they verify and were made for `key`."""
    digest, _, body = data.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        raise CacheFileError("its checksum does not match its content")
    meta, _, archive = body.partition(b"\n")
    try:
        header = json.loads(meta)
    except ValueError as error:
        raise CacheFileError(f"its metadata is not JSON: {error}") from error
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("key") != key:
        raise CacheFileError("it was made by other code (its key or format differs)")
    try:
        with np.load(io.BytesIO(archive), allow_pickle=False) as found:
            arrays = [found[f"a{i}"] for i in range(len(found.files))]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise CacheFileError(f"its arrays do not read ({type(error).__name__}: {error})") from error
    return decode(header.get("value"), arrays)


def _checksum(meta: bytes, arrays: list[np.ndarray]) -> str:
    digest = hashlib.sha256(meta)
    for array in arrays:
        digest.update(f"\0{array.dtype.str}{array.shape}\0".encode())
        # The bytes in C order; a contiguous array's own buffer, without a copy.
        digest.update(array.data if array.flags.c_contiguous else array.tobytes())
    return digest.hexdigest()
